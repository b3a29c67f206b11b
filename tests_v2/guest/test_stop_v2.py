"""The tree stop on a real cgroup v2 kernel: a job's cage is frozen (cgroup.freeze) while its
members are listed and signalled, so a job that forks in a loop leaves nothing behind.

The job ignores TERM (its children inherit that) and runs a chain whose every link starts the
next and exits, beside a loop that starts a child every tenth of a second through the whole
grace: a stop that lists the tree and then signals it is always a fork behind.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from cagekit import MIB, SWARMDECK, end_session, session_processes, write_config

DEADLINE = 120.0
JOB = """trap '' TERM
if [ "$1" = link ]; then sh "$0" link & exit 0; fi
sh "$0" link &
while :; do sleep 600 & sleep 0.1; done
"""


def test_a_timed_out_job_forking_in_a_loop_leaves_nothing_and_exits_253(
    v2_slice: Path, isolated_home: Path
) -> None:
    write_config(isolated_home / "config.toml", v2_slice, 100 * MIB, default_prediction="16M")
    script = isolated_home / "forker.sh"
    script.write_text(JOB)
    runner = subprocess.Popen(
        [SWARMDECK, "run", "--timeout", "1", "--", "sh", str(script)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )
    try:
        # Not communicate(): a child left behind would hold the runner's pipes open.
        code = runner.wait(timeout=DEADLINE)
        left = session_processes(runner.pid)
    finally:
        end_session(runner.pid)
    _, err = runner.communicate(timeout=DEADLINE)
    assert code == 253, err
    assert left == [], f"{len(left)} processes of the job outlived its stop"
    assert "cannot remove cage" not in err
    assert not [path for path in v2_slice.iterdir() if path.is_dir()], "its cage is left"
