"""A guardian that finishes a tree stop when the process doing it dies halfway.

A tree stop freezes the tree with SIGSTOP before it terminates it; a stopper killed in between
left the tree frozen for good. So before its first SIGSTOP the stopper starts this guardian,
outside the tree and in a session of its own, and tells it through a pipe each process it is
about to freeze. If the pipe ends before the stopper says the stop is over, the guardian stops
what it was told of, and whatever was born under it, through the same identity-checked path
(SIGKILL right after the CONT), so nothing stays frozen. A single-threaded stopper forks the
guardian; one with threads (the app) starts `python -m swarmdeck.actions.stop_guardian`, since
a fork copies only the forking thread. This module imports nothing of kill.py, which imports it.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

from swarmdeck.probes.procs import ProcessIdentity

if TYPE_CHECKING:
    import subprocess
    from collections.abc import Callable, Iterable

    Finish = Callable[[list[ProcessIdentity]], object]

DONE = b"done\n"
"""What the stopper writes when its stop is over: the guardian then exits without acting."""


class StopGuard:
    """The stopper's end of a running guardian."""

    def __init__(self, write_fd: int, pid: int, process: subprocess.Popen[bytes] | None) -> None:
        self._fd: int | None = write_fd
        self._pid = pid
        self._process = process

    @classmethod
    def start(cls, finish: Finish) -> StopGuard | None:
        """A guardian, started, that calls `finish` with what it was told should the stopper
        die halfway; None when none could be (no process or pipe left): the stop then goes on
        as it always did, unguarded. A guardian started apart (the stopper has threads) is
        stop_guardian.py, whose `finish` is kill.finish_stop."""
        try:
            read_fd, write_fd = os.pipe2(os.O_CLOEXEC)
        except OSError:
            return None
        try:
            if _single_threaded():
                return cls(write_fd, _fork_guardian(read_fd, write_fd, finish), None)
            # Imported here: it costs a caged run milliseconds, and the runner forks instead.
            import subprocess

            process = subprocess.Popen(
                [sys.executable, "-m", "swarmdeck.actions.stop_guardian"],
                stdin=read_fd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                cwd="/", start_new_session=True,
            )
            return cls(write_fd, process.pid, process)
        except OSError:
            os.close(write_fd)
            return None
        finally:
            os.close(read_fd)

    def record(self, idents: Iterable[ProcessIdentity]) -> None:
        """Tell the guardian of processes about to be frozen; call before signalling them."""
        self._write(b"".join(f"{i.pid} {i.start_ticks}\n".encode() for i in idents))

    def done(self) -> None:
        """The stop is over: the guardian exits without acting, and is reaped."""
        self._write(DONE)
        self.abandon()

    def abandon(self) -> None:
        """End the pipe (without DONE, the guardian finishes the stop) and reap the guardian."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        if self._process is not None:
            self._process.wait()
            return
        try:
            os.waitpid(self._pid, 0)
        except ChildProcessError:
            # Reaped already by a wait for any child: it has exited, all this waits for.
            return

    def _write(self, data: bytes) -> None:
        if self._fd is None:
            return
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(self._fd, view):]
        except OSError:
            # The guardian is gone (killed with us, say): the stop goes on unguarded, as before.
            os.close(self._fd)
            self._fd = None


def _single_threaded() -> bool:
    try:
        return len(os.listdir("/proc/self/task")) == 1
    except OSError:
        return False


def _fork_guardian(read_fd: int, write_fd: int, finish: Finish) -> int:
    """Fork the guardian; in the child, run it and exit without returning."""
    # Imported here, before the fork: with the enum it builds, signal is a costly import,
    # paid only by a stop that found something alive, never by every caged run's import.
    import signal

    pid = os.fork()
    if pid:
        return pid
    try:
        os.close(write_fd)
        os.setsid()
        signal.set_wakeup_fd(-1)
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)
        # Hold nothing of the stopper's: not its output (the caller waits for that pipe's
        # end), not its files, not its pipe's write end.
        null = os.open(os.devnull, os.O_RDWR)
        os.dup2(read_fd, 0)
        for fd in (1, 2):
            os.dup2(null, fd)
        # The descriptors open, not every number below the limit (thousands of useless closes).
        for name in os.listdir("/proc/self/fd"):
            if int(name) > 2:
                try:
                    os.close(int(name))
                except OSError:
                    continue  # the listing's own descriptor, closed already
        guard(0, finish)
    finally:
        os._exit(0)


def guard(read_fd: int, finish: Finish) -> None:
    """The guardian: read what the stopper says until the pipe ends; unless it said DONE, hand
    every process it was told of to `finish` (which stops them and their descendants)."""
    chunks = []
    while chunk := os.read(read_fd, 65536):
        chunks.append(chunk)
    said = b"".join(chunks)
    if said.endswith(DONE):
        return
    told = []
    for line in said.splitlines():
        words = line.split()
        if len(words) == 2 and words[0].isdigit() and words[1].isdigit():
            told.append(ProcessIdentity(int(words[0]), int(words[1])))
    if told:
        finish(told)
