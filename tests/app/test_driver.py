"""The control room's terminal driver on a real pseudo-terminal: its input thread sleeps until
there is input, and every kind of input, resizing, suspending and quitting work as with
Textual's own driver. (Pilot runs apps on a headless driver, so these start real programs.)"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from pty_terminal import PtyProgram, wait_until

APP = Path(__file__).resolve().parent / "pty_app.py"
SWARMDECK = Path(sys.executable).parent / "swarmdeck"
START = 30.0
"""Seconds a program gets to start and draw on a machine busy with other tests."""
PROMPT = 5.0
"""Seconds within which quitting ends the program."""
STOP_ROUNDS = 40
"""Ctrl-Z and `fg` rounds in quick succession (the handlers once nested within ten)."""


def _env() -> dict[str, str]:
    return dict(os.environ, TERM="xterm-256color", LANG="C.UTF-8", LC_ALL="C.UTF-8")


class NotingProgram:
    """pty_app.py on its own terminal, and the notes it writes."""

    def __init__(self, notes: Path, driver: str = "quiet") -> None:
        self.notes = notes
        self.program = PtyProgram([sys.executable, str(APP), str(notes), driver], _env())

    def lines(self) -> list[str]:
        return self.notes.read_text().splitlines() if self.notes.exists() else []

    def wait_for(self, line: str, timeout: float = START) -> bool:
        return wait_until(lambda: line in self.lines(), timeout)

    def wait_ready(self) -> bool:
        """Drawn at the terminal's size, with its input thread noted."""
        def ready() -> bool:
            return "size 100x30" in self.lines() and bool(self.input_threads())

        return wait_until(ready, START)

    def input_threads(self) -> list[int]:
        return [int(line.split()[1]) for line in self.lines() if line.startswith("thread ")]


@pytest.fixture
def noting(tmp_path: Path) -> Iterator[NotingProgram]:
    program = NotingProgram(tmp_path / "notes")
    try:
        assert program.wait_ready(), program.program.output[-2000:]
        yield program
    finally:
        program.program.close()


def _voluntary_switches(pid: int, tid: int) -> int:
    status = Path(f"/proc/{pid}/task/{tid}/status").read_text()
    line = next(line for line in status.splitlines() if line.startswith("voluntary_ctxt_sw"))
    return int(line.split()[1])


def _wakes_in_a_second(program: NotingProgram) -> int:
    (tid,) = program.input_threads()
    before = _voluntary_switches(program.program.pid, tid)
    time.sleep(1.0)
    return _voluntary_switches(program.program.pid, tid) - before


def test_the_input_thread_sleeps_while_no_key_comes(noting: NotingProgram) -> None:
    assert _wakes_in_a_second(noting) <= 1


def test_textuals_own_input_thread_wakes_ten_times_a_second(tmp_path: Path) -> None:
    """What the driver is for: the same app on Textual's driver wakes on a 0.1 s timer."""
    program = NotingProgram(tmp_path / "notes", driver="textual")
    try:
        assert program.wait_ready()
        assert _wakes_in_a_second(program) >= 5
    finally:
        program.program.close()


def test_keys_and_a_lone_escape_reach_the_app(noting: NotingProgram) -> None:
    noting.program.send(b"a")
    assert noting.wait_for("key a")
    noting.program.send(b"\x1b")
    assert noting.wait_for("key escape")
    noting.program.send(b"\x1b[A")
    assert noting.wait_for("key up")


def test_a_paste_and_a_click_reach_the_app(noting: NotingProgram) -> None:
    noting.program.send(b"\x1b[200~pasted text\x1b[201~")
    assert noting.wait_for("paste pasted text")
    noting.program.send(b"\x1b[<0;7;4M\x1b[<0;7;4m")
    assert noting.wait_for("mouse 6 3")


def test_resizing_the_terminal_resizes_the_app(noting: NotingProgram) -> None:
    noting.program.resize(120, 40)
    assert noting.wait_for("size 120x40")


def test_after_suspend_and_resume_keys_still_come_and_the_thread_sleeps(
    noting: NotingProgram,
) -> None:
    noting.program.send(b"s")
    assert noting.wait_for("resumed")
    assert wait_until(lambda: len(noting.input_threads()) == 2, START)
    noting.program.send(b"b")
    assert noting.wait_for("key b")
    tid = noting.input_threads()[-1]
    before = _voluntary_switches(noting.program.pid, tid)
    time.sleep(1.0)
    assert _voluntary_switches(noting.program.pid, tid) - before <= 1


def _stopped(pid: int) -> bool:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat[stat.rindex(")") + 2] == "T"


def test_ctrl_z_stops_the_app_every_time_and_it_takes_keys_again_when_continued(
    noting: NotingProgram,
) -> None:
    """SIGTSTP, as a shell's job control sends it, then SIGCONT (`fg`), and Ctrl-Z again
    before the app has redrawn, while it redraws for a resize: each SIGTSTP stops it (none
    lands inside the handling of the one before) and it still takes keys after the last `fg`."""
    pid = noting.program.pid
    for round_ in range(STOP_ROUNDS):
        noting.program.resize(80 + round_ % 40, 24 + round_ % 10)
        time.sleep((round_ % 5) * 0.004)
        os.kill(pid, signal.SIGTSTP)
        assert wait_until(lambda: _stopped(pid), START), f"round {round_} never stopped"
        os.kill(pid, signal.SIGCONT)
        assert wait_until(lambda: not _stopped(pid), START)
    noting.program.send(b"c")
    assert noting.wait_for("key c")
    noting.program.send(b"q")
    assert noting.program.wait_exit(PROMPT) == 0


def test_q_ends_the_app_at_once(noting: NotingProgram) -> None:
    noting.program.send(b"q")
    assert noting.program.wait_exit(PROMPT) == 0


def test_the_control_room_on_a_terminal_quits_on_q(tmp_path: Path) -> None:
    program = PtyProgram([str(SWARMDECK), "ui"], _env())
    try:
        assert wait_until(lambda: b"Hosts" in program.output, START), program.output[-2000:]
        program.send(b"q")
        assert program.wait_exit(PROMPT) == 0, program.output[-2000:]
    finally:
        program.close()
