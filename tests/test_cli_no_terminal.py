"""The control room needs a terminal: started without one (an agent's Bash tool, a pipe, a
cron job) it refuses at once with one line and exit 251 instead of drawing into the pipe and
waiting for keys that never come."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from swarmdeck.exitcodes import ExitCode

SWARMDECK = str(Path(sys.executable).with_name("swarmdeck"))
REFUSAL = (
    "swarmdeck: the control room needs a terminal; `swarmdeck status` prints the same facts\n"
)


@pytest.mark.parametrize("argv", [[], ["ui"], ["ui", "--readonly"]], ids=" ".join)
def test_the_control_room_without_a_terminal_refuses_at_once(argv: list[str]) -> None:
    done = subprocess.run(
        [SWARMDECK, *argv], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=20
    )
    assert (done.returncode, done.stdout, done.stderr) == (ExitCode.USAGE, "", REFUSAL)


def test_the_control_room_with_a_terminal_for_input_but_output_piped_refuses() -> None:
    leader, follower = os.openpty()
    try:
        done = subprocess.run(
            [SWARMDECK, "ui"], stdin=follower, capture_output=True, text=True, timeout=20
        )
    finally:
        os.close(leader)
        os.close(follower)
    assert (done.returncode, done.stdout, done.stderr) == (ExitCode.USAGE, "", REFUSAL)


def test_a_demo_without_a_terminal_starts_no_scene_and_points_to_no_ui(tmp_path: Path) -> None:
    done = subprocess.run(
        [SWARMDECK, "demo"], stdin=subprocess.DEVNULL, capture_output=True, text=True,
        timeout=20,
    )
    assert (done.returncode, done.stdout) == (ExitCode.USAGE, "")
    assert done.stderr == (
        "swarmdeck: the control room needs a terminal;"
        " `swarmdeck demo --no-ui` runs the scene without it\n"
    )
