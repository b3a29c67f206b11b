#!/bin/sh
# Runs inside the guest as its command: the v2 tier in one pytest run (or the tests named after
# the results folder $1), its per-test results in junit XML and its log in $1 (the guest's own
# /tmp never reaches the host), its exit code in $1/rc. The worktree is read-only here: no cache,
# no bytecode is written.
out=$1
shift
cd "$(dirname "$0")/../.." || exit 1
export PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 TMPDIR=/tmp
if [ $# -eq 0 ]; then
    set -- tests_v2/guest $(grep -v '^#' tests_v2/guest_tests.txt)
fi
.venv/bin/python -m pytest -p no:cacheprovider -n 0 -v -rfE -o addopts= -p no:hypothesispytest \
    --junitxml="$out/junit.xml" "$@" 2>&1 | tee "$out/pytest.log"
echo $? > "$out/rc"
