#!/bin/sh
# Runs inside the guest as its command: the v2 tier in one pytest run (or the tests named after
# the results folder $1), its per-test results in junit XML and its log in $1 (the guest's own
# /tmp never reaches the host), its exit code in $1/rc. The worktree is read-only here: no cache,
# no bytecode is written.
out=$1
shift
cd "$(dirname "$0")/../.." || exit 1
# Emulated without KVM, the guest is many times slower than the host its tests/ files were
# written for: a condition they wait on is given 120 s instead of 30 (tests/waiting.py).
export PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 TMPDIR=/tmp TEST_WAIT_SECONDS=120
if [ $# -eq 0 ]; then
    set -- tests_v2/guest $(grep -v '^#' tests_v2/guest_tests.txt)
fi
.venv/bin/python -m pytest -p no:cacheprovider -n 0 -v -rfE -o addopts= -p no:hypothesispytest --timeout=600 \
    --junitxml="$out/junit.xml" "$@" 2>&1 | tee "$out/pytest.log"
echo $? > "$out/rc"
