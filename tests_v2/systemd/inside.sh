#!/bin/sh
# Runs inside the systemd guest, as root from a system service, once its boot is done: the
# scope backend's checks on the console (the host reads their PASS/FAIL lines back).
cd "$(dirname "$0")/../.." || exit 1
PYTHONPATH=$PWD/src PYTHONDONTWRITEBYTECODE=1 python3 tests_v2/systemd/checks.py
