"""When the control room's terminal goes away (its tmux session killed, its ssh dropped, its pty
closed), `swarmdeck ui` and `swarmdeck demo` end within seconds with 129, the shell's code for
SIGHUP, and say no traceback; a SIGHUP or a SIGTERM while the terminal is still there ends them
as promptly, with the terminal put back as it was. Real programs on real pseudo-terminals: a
hang fails its test by a timeout, never blocks the suite."""

from __future__ import annotations

import os
import re
import signal
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from pty_terminal import PtyProgram, SideTerminal, wait_until

from swarmdeck.app.driver import MAX_QUEUED_WRITES, ScreenWriter, TerminalOutput
from swarmdeck.exitcodes import ExitCode

SWARMDECK = Path(sys.executable).parent / "swarmdeck"
PTY_APP = Path(__file__).resolve().parent / "pty_app.py"
START = 60.0
"""Seconds a program gets to start and draw on a machine busy with other tests."""
PROMPT = 5.0
"""Seconds within which the control room ends once its terminal is gone."""
SCENE_STOP = 60.0
"""Seconds the demo gets to end: stopping its scene's jobs, sessions and peer takes a while."""
ALT_SCREEN_ON, ALT_SCREEN_OFF = b"\x1b[?1049h", b"\x1b[?1049l"
SUMMARY = re.compile(rb"demo scene in (\S+):")


def _env() -> dict[str, str]:
    return dict(os.environ, TERM="xterm-256color", LANG="C.UTF-8", LC_ALL="C.UTF-8")


def _screen(program: PtyProgram, stderr: Path | SideTerminal | None) -> bytes:
    """What the program drew: on its terminal, or where its stderr goes (Textual draws there)."""
    if isinstance(stderr, SideTerminal):
        return stderr.output
    return program.output if stderr is None else _said(stderr).encode()


def _started(
    argv: list[str], stderr: Path | SideTerminal | None = None, ignore_hangup: bool = False
) -> PtyProgram:
    """`swarmdeck ARGV` on a terminal of its own, once it has drawn the control room."""
    program = PtyProgram(
        [str(SWARMDECK), *argv], _env(), stderr=stderr, ignore_hangup=ignore_hangup
    )
    if not wait_until(lambda: b"Hosts" in _screen(program, stderr) or program.exited(), START):
        program.close()
        pytest.fail(f"{argv} did not draw in {START:g} s: {_screen(program, stderr)[-2000:]!r}")
    if program.exited():
        program.close()
        said = _screen(program, stderr)[-2000:]
        pytest.fail(f"{argv} ended at once ({program.status}): {said!r}")
    return program


@pytest.fixture
def ui() -> Iterator[PtyProgram]:
    program = _started(["ui"])
    try:
        yield program
    finally:
        program.close()


def _said(path: Path) -> str:
    return path.read_text(errors="replace") if path.exists() else ""


def _terminal_put_back(program: PtyProgram) -> bool:
    """Whether the program left the alternate screen after it last entered it (read off the
    terminal once the program ended)."""
    def left() -> bool:
        output = program.output
        return output.rfind(ALT_SCREEN_OFF) > output.rfind(ALT_SCREEN_ON)

    return wait_until(left, PROMPT)


def test_the_ui_whose_terminal_closes_exits_129_promptly(ui: PtyProgram) -> None:
    ui.close_terminal()
    assert ui.wait_exit(PROMPT) == ExitCode.TERMINAL_GONE


@pytest.mark.parametrize("ignore_hangup", [False, True], ids=["hangup", "nohup"])
def test_the_ui_whose_terminal_closes_leaves_with_129_and_no_traceback(
    tmp_path: Path, ignore_hangup: bool
) -> None:
    """Its stderr kept in a file, so what it says after its terminal is gone can be read. Under
    `nohup` no SIGHUP comes: the input thread's failed read alone ends the app."""
    said = tmp_path / "stderr"
    program = _started(["ui"], stderr=said, ignore_hangup=ignore_hangup)
    try:
        program.close_terminal()
        assert program.wait_exit(PROMPT) == ExitCode.TERMINAL_GONE, _said(said)[-2000:]
    finally:
        program.close()
    assert "Traceback" not in _said(said)


def test_a_screen_that_can_no_longer_be_written_ends_the_ui_with_129() -> None:
    """The screen (stderr) on a terminal of its own that goes away while the keyboard's stays:
    no SIGHUP, no failed read, only writes that fail. Textual's writer thread must live on
    and the app end, not block for ever on the writer's full queue."""
    screen = SideTerminal()
    try:
        program = _started(["ui"], stderr=screen)
        try:
            screen.close()
            assert program.wait_exit(PROMPT) == ExitCode.TERMINAL_GONE
        finally:
            program.close()
    finally:
        screen.close()


def test_the_input_thread_ends_the_app_with_129_when_its_read_fails(tmp_path: Path) -> None:
    """The driver alone (pty_app.py, which has no check of its own on the terminal), SIGHUP
    ignored: the input thread's failed read is what ends the app, without a traceback."""
    notes, said = tmp_path / "notes", tmp_path / "stderr"
    program = PtyProgram(
        [sys.executable, str(PTY_APP), str(notes), "quiet"], _env(),
        stderr=said, ignore_hangup=True,
    )
    try:
        assert wait_until(lambda: notes.exists() and "thread" in notes.read_text(), START)
        program.close_terminal()
        assert program.wait_exit(PROMPT) == ExitCode.TERMINAL_GONE, _said(said)[-2000:]
    finally:
        program.close()
    assert "Traceback" not in _said(said)


def test_sighup_to_the_ui_exits_129_and_puts_the_terminal_back(ui: PtyProgram) -> None:
    os.kill(ui.pid, signal.SIGHUP)
    assert ui.wait_exit(PROMPT) == ExitCode.TERMINAL_GONE, ui.output[-2000:]
    assert _terminal_put_back(ui)
    assert b"Traceback" not in ui.output


def test_sigterm_ends_the_ui_as_quitting_does(ui: PtyProgram) -> None:
    os.kill(ui.pid, signal.SIGTERM)
    assert ui.wait_exit(PROMPT) == 0, ui.output[-2000:]
    assert _terminal_put_back(ui)
    assert b"Traceback" not in ui.output


def _scene_root(program: PtyProgram) -> Path:
    found = SUMMARY.search(program.output)
    assert found, program.output[-2000:]
    return Path(found.group(1).decode())


def test_the_demo_whose_terminal_closes_exits_129_and_removes_its_scene(tmp_path: Path) -> None:
    said = tmp_path / "stderr"
    program = _started(["demo", "--uncaged", "--step", "0.5"], stderr=said)
    try:
        root = _scene_root(program)
        program.close_terminal()
        code = program.wait_exit(SCENE_STOP)
        assert code == ExitCode.TERMINAL_GONE, _said(said)[-2000:]
    finally:
        program.close()
    assert "Traceback" not in _said(said)
    assert not root.exists()


def test_sighup_to_the_demo_exits_129_and_removes_its_scene() -> None:
    program = _started(["demo", "--uncaged", "--step", "0.5"])
    try:
        root = _scene_root(program)
        os.kill(program.pid, signal.SIGHUP)
        assert program.wait_exit(SCENE_STOP) == ExitCode.TERMINAL_GONE, program.output[-2000:]
        assert _terminal_put_back(program)
    finally:
        program.close()
    assert b"Traceback" not in program.output
    assert not root.exists()


def test_the_writer_thread_outlives_a_terminal_that_went_away() -> None:
    """The writer thread on a closed pty: every write after the first failed one is
    dropped, so none blocks on a queue nobody empties, and stopping it returns."""
    leader, follower = os.openpty()
    stream = open(follower, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
    told: list[bool] = []
    writer = ScreenWriter(TerminalOutput(stream, lambda: told.append(True)))
    writer.start()
    try:
        os.close(leader)

        def write_a_lot() -> None:
            for _ in range(MAX_QUEUED_WRITES * 10):
                writer.write("x" * 100)
            writer.stop()

        writing = threading.Thread(target=write_a_lot, daemon=True)
        writing.start()
        writing.join(PROMPT)
        assert not writing.is_alive(), "a write or stop blocked: the writer thread died"
        assert told == [True]
    finally:
        stream.close()
        os.close(follower)
