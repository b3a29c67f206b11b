"""A program on a pseudo-terminal of its own, as a person's terminal runs it: it is the session
leader with the terminal as its controlling one (so resizing the terminal sends it SIGWINCH),
and everything it draws is read off as it comes, so it never blocks on a full terminal."""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import struct
import termios
import threading
import time
from collections.abc import Callable


def _window(columns: int, rows: int) -> bytes:
    return struct.pack("HHHH", rows, columns, 0, 0)


class PtyProgram:
    """`argv` started on a new terminal of `columns`×`rows`."""

    def __init__(
        self, argv: list[str], env: dict[str, str], columns: int = 100, rows: int = 30
    ) -> None:
        window = _window(columns, rows)
        pid, fd = os.forkpty()
        if pid == 0:
            try:
                fcntl.ioctl(0, termios.TIOCSWINSZ, window)
                os.execve(argv[0], argv, env)
            finally:
                os._exit(127)
        self.pid, self.fd = pid, fd
        self.status: int | None = None
        self._output = bytearray()
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
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

    def close(self) -> None:
        if not self.exited():
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        os.close(self.fd)
        self._reader.join(5)


def wait_until(condition: Callable[[], bool], timeout: float, step: float = 0.02) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(step)
    return True
