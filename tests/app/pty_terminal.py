"""A program on a pseudo-terminal of its own, as a person's terminal runs it: it is the session
leader with the terminal as its controlling one (so resizing the terminal sends it SIGWINCH,
and closing the terminal hangs it up as a killed tmux session or a dropped ssh does), and
everything it draws is read off as it comes, so it never blocks on a full terminal."""

from __future__ import annotations

import contextlib
import fcntl
import os
import select
import signal
import struct
import termios
import threading
import time
from collections.abc import Callable
from pathlib import Path


def _window(columns: int, rows: int) -> bytes:
    return struct.pack("HHHH", rows, columns, 0, 0)


class Drain:
    """Everything written on the far side of a pty, read off as it comes, until stopped."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._output = bytearray()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        poller = select.poll()
        poller.register(self.fd, select.POLLIN)
        while not self._stop.is_set():
            if not poller.poll(50):
                continue
            try:
                data = os.read(self.fd, 65536)
            except OSError:
                return
            if not data:
                return
            with self._lock:
                self._output += data

    @property
    def output(self) -> bytes:
        with self._lock:
            return bytes(self._output)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)


class SideTerminal:
    """A second pseudo-terminal, for a program's stderr apart from its controlling terminal
    (Textual draws on stderr): closing it makes every write there fail (EIO) while the
    program's own terminal, and its keys, stay."""

    def __init__(self) -> None:
        self.leader, self.follower = os.openpty()
        self._drain = Drain(self.leader)

    @property
    def output(self) -> bytes:
        return self._drain.output

    def close(self) -> None:
        if self.leader < 0:
            return
        self._drain.stop()
        os.close(self.leader)
        os.close(self.follower)
        self.leader = self.follower = -1


class PtyProgram:
    """`argv` started on a new terminal of `columns`×`rows`; with `stderr`, its stderr goes to
    that file (what it says there can be read after the terminal is gone) or that side
    terminal instead; with `ignore_hangup`, it starts with SIGHUP ignored, as under `nohup`."""

    def __init__(
        self,
        argv: list[str],
        env: dict[str, str],
        columns: int = 100,
        rows: int = 30,
        *,
        stderr: Path | SideTerminal | None = None,
        ignore_hangup: bool = False,
    ) -> None:
        window = _window(columns, rows)
        pid, fd = os.forkpty()
        if pid == 0:
            try:
                fcntl.ioctl(0, termios.TIOCSWINSZ, window)
                if isinstance(stderr, SideTerminal):
                    fcntl.ioctl(stderr.follower, termios.TIOCSWINSZ, window)
                    os.dup2(stderr.follower, 2)
                elif stderr is not None:
                    said = os.open(stderr, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                    os.dup2(said, 2)
                if ignore_hangup:
                    signal.signal(signal.SIGHUP, signal.SIG_IGN)
                os.execve(argv[0], argv, env)
            finally:
                os._exit(127)
        self.pid, self.fd = pid, fd
        self.status: int | None = None
        self._drain = Drain(fd)

    @property
    def output(self) -> bytes:
        return self._drain.output

    def send(self, data: bytes) -> None:
        os.write(self.fd, data)

    def resize(self, columns: int, rows: int) -> None:
        """What a terminal does when its window changes: the kernel then sends SIGWINCH."""
        fcntl.ioctl(self.fd, termios.TIOCSWINSZ, _window(columns, rows))

    def exited(self) -> bool:
        if self.status is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.status = os.waitstatus_to_exitcode(status)
        return self.status is not None

    def wait_exit(self, timeout: float) -> int | None:
        """The exit code once the program ends within `timeout` seconds, else None."""
        return self.status if wait_until(self.exited, timeout) else None

    def close_terminal(self) -> None:
        """Close the terminal's side of the pty, as a killed tmux session or a dropped ssh
        does: the kernel hangs the program's terminal up (SIGHUP, then EIO on reads and
        writes)."""
        if self.fd < 0:
            return
        self._drain.stop()
        os.close(self.fd)
        self.fd = -1

    def close(self) -> None:
        if not self.exited():
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        self.close_terminal()


def wait_until(condition: Callable[[], bool], timeout: float, step: float = 0.02) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(step)
    return True
