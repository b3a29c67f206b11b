"""Starting a job's process without subprocess: what exec or the set-up says comes back before
`spawn` returns, and the job starts as Popen would start it (no stray descriptors, default
signal actions)."""

from __future__ import annotations

import errno
import os
import signal
import sys
from pathlib import Path

import pytest

from swarmdeck.actions.spawn import CannotEnter, SetupFailed, spawn


def nothing() -> None:
    return None


def test_a_started_command_gives_its_exit_code_or_minus_its_signal(tmp_path: Path) -> None:
    done = spawn(["sh", "-c", "exit 3"], str(tmp_path), os.environ, nothing)
    assert done.pid > 0
    assert done.wait() == 3
    assert done.wait() == 3
    killed = spawn(["sh", "-c", "kill -TERM $$"], str(tmp_path), os.environ, nothing)
    assert killed.wait() == -15


def test_a_command_given_streams_reads_and_writes_those(tmp_path: Path) -> None:
    source, sink = tmp_path / "in", tmp_path / "out"
    source.write_text("from the file\n")
    read = os.open(source, os.O_RDONLY)
    write = os.open(sink, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        done = spawn(["sh", "-c", "cat; echo to-err >&2"], str(tmp_path), os.environ, nothing,
                     streams=(read, write, write))
    finally:
        os.close(read)
        os.close(write)
    assert done.wait() == 0
    assert sink.read_text() == "from the file\nto-err\n"


def test_a_missing_command_is_file_not_found_naming_it(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError) as caught:
        spawn(["no-such-command-here"], str(tmp_path), os.environ, nothing)
    assert caught.value.filename == "no-such-command-here"


def test_a_file_that_cannot_be_executed_is_permission_denied(tmp_path: Path) -> None:
    script = tmp_path / "script"
    script.write_text("#!/bin/sh\ntrue\n")
    script.chmod(0o644)
    with pytest.raises(PermissionError):
        spawn([str(script)], str(tmp_path), os.environ, nothing)


def test_a_missing_folder_cannot_be_entered_and_is_named(tmp_path: Path) -> None:
    with pytest.raises(CannotEnter) as caught:
        spawn(["true"], str(tmp_path / "gone"), os.environ, nothing)
    assert caught.value.errno == errno.ENOENT
    assert caught.value.filename == str(tmp_path / "gone")


def test_a_folder_run_as_the_command_from_inside_it_is_the_command_refused(
    tmp_path: Path,
) -> None:
    with pytest.raises(PermissionError) as caught:
        spawn([str(tmp_path)], str(tmp_path), os.environ, nothing)
    assert not isinstance(caught.value, CannotEnter)


def test_a_failing_set_up_runs_nothing_and_says_why(tmp_path: Path) -> None:
    marker = tmp_path / "ran"

    def refuse() -> None:
        raise OSError(13, "no entry into the cage")

    with pytest.raises(SetupFailed, match="no entry into the cage"):
        spawn(["touch", str(marker)], str(tmp_path), os.environ, refuse)
    assert not marker.exists()
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)


def test_the_set_up_runs_in_the_child_before_the_command(tmp_path: Path) -> None:
    def leave_a_mark() -> None:
        (tmp_path / "setup").write_text(str(os.getpid()))

    child = spawn(["sh", "-c", "echo $$ > command"], str(tmp_path), os.environ, leave_a_mark)
    assert child.wait() == 0
    assert (tmp_path / "setup").read_text() == (tmp_path / "command").read_text().strip()
    assert int((tmp_path / "setup").read_text()) == child.pid


def test_the_job_inherits_only_the_standard_descriptors(tmp_path: Path) -> None:
    stray = os.open(tmp_path, os.O_RDONLY)
    os.set_inheritable(stray, True)
    try:
        listing = "import os; print(*sorted(map(int, os.listdir('/proc/self/fd'))))"
        child = spawn(
            ["sh", "-c", f'{sys.executable} -c "{listing}" > fds'], str(tmp_path), os.environ,
            nothing,
        )
        assert child.wait() == 0
    finally:
        os.close(stray)
    # 0-2 and the one the listing opens for itself.
    assert (tmp_path / "fds").read_text().split() == ["0", "1", "2", "3"]


def test_the_job_starts_with_the_signals_python_ignores_back_at_their_default(
    tmp_path: Path,
) -> None:
    child = spawn(["sh", "-c", "grep SigIgn /proc/$$/status > ignored"], str(tmp_path),
                  os.environ, nothing)
    assert child.wait() == 0
    mask = int((tmp_path / "ignored").read_text().split()[1], 16)
    for signum in (13, 25):  # SIGPIPE, SIGXFSZ
        assert not mask & (1 << (signum - 1))


def test_a_stop_signal_during_the_set_up_ends_the_child_before_the_command(
    tmp_path: Path,
) -> None:
    # The runner catches TERM, INT and HUP; its handler must not swallow one meant for the job
    # while the child is still between fork and exec.
    # The handler runs in the child if at all: it leaves a file the parent can look for.
    caught = tmp_path / "caught"
    previous = signal.signal(signal.SIGTERM, lambda _signum, _frame: caught.touch())
    marker = tmp_path / "ran"
    try:
        child = spawn(
            ["touch", str(marker)], str(tmp_path), os.environ,
            lambda: os.kill(os.getpid(), signal.SIGTERM),
        )
        assert child.wait() == -signal.SIGTERM
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert not marker.exists()
    assert not caught.exists()


def test_the_job_starts_with_the_runner_s_signal_mask(tmp_path: Path) -> None:
    # The job's own mask, read by the job itself: a shell waiting for a child blocks every
    # signal for a moment, so a child reading the shell's mask can see it full.
    child = spawn(["sh", "-c", "exec grep SigBlk /proc/self/status > blocked"], str(tmp_path),
                  os.environ, nothing)
    assert child.wait() == 0
    assert int((tmp_path / "blocked").read_text().split()[1], 16) == 0
    assert signal.pthread_sigmask(signal.SIG_BLOCK, []) == set()


def test_a_fork_that_fails_leaves_no_descriptor_and_no_blocked_signal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_room() -> int:
        raise BlockingIOError(11, "Resource temporarily unavailable")

    opened: list[int] = []
    real_pipe = os.pipe

    def noted_pipe() -> tuple[int, int]:
        ends = real_pipe()
        opened.extend(ends)
        return ends

    monkeypatch.setattr(os, "pipe", noted_pipe)
    monkeypatch.setattr(os, "fork", no_room)
    with pytest.raises(BlockingIOError):
        spawn(["true"], str(tmp_path), os.environ, nothing)
    assert opened
    for end in opened:
        with pytest.raises(OSError) as closed:
            os.fstat(end)
        assert closed.value.errno == errno.EBADF
    assert signal.pthread_sigmask(signal.SIG_BLOCK, []) == set()
