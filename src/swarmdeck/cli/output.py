"""What a command does when its own output cannot be written: one home for every such case.

A reader that goes away (`swarmdeck status | head -1`) ends the command quietly with 141, as
SIGPIPE would. Any other failure to write stdout (a full disk, a closed stdout, an I/O error)
is told in one line on stderr and ends it with 251, never a traceback. stderr itself never
fails a command: where it cannot be written (closed, a full disk) there is nowhere left to say
anything, so nothing is said, and the command's own exit status still holds; a caged run with
no stderr exits with its job's status.

Kept light: `swarmdeck run` starts here.
"""

from __future__ import annotations

import errno
import os
import sys
from typing import TYPE_CHECKING

from swarmdeck.exitcodes import ExitCode

if TYPE_CHECKING:
    from typing import TextIO


UNWRITABLE_EXIT = ExitCode.USAGE
"""The exit code of a command whose output cannot be written: an environment it cannot work
in, as a usage mistake is (README.md says so beside the commands)."""


class OutputFailed(Exception):
    """stdout cannot be written, for another reason than its reader going away."""

    def __init__(self, error: OSError) -> None:
        super().__init__(error.strerror or str(error))


class GuardedStdout:
    """sys.stdout for a command: a failed write or flush raises OutputFailed (a closed pipe
    stays a BrokenPipeError, which Rich and `main` know); a stdout closed before the start
    fails as soon as something is written to it. Everything else is the stream's own."""

    def __init__(self, stream: TextIO | None) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        if self._stream is None:
            raise OutputFailed(OSError(errno.EBADF, "stdout is closed"))
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            raise
        except OSError as error:
            raise OutputFailed(error) from None

    def flush(self) -> None:
        if self._stream is None:
            return
        try:
            self._stream.flush()
        except BrokenPipeError:
            raise
        except OSError as error:
            raise OutputFailed(error) from None

    def isatty(self) -> bool:
        return self._stream is not None and self._stream.isatty()

    @property
    def buffer(self) -> GuardedStdout:
        """The binary stream under it, guarded the same way (a job's fetched output)."""
        return GuardedStdout(getattr(self._stream, "buffer", None))

    def __getattr__(self, name: str) -> object:
        if self._stream is None:
            raise AttributeError(name)
        return getattr(self._stream, name)


class QuietStderr:
    """sys.stderr for a command: what cannot be written is dropped, the exit status tells."""

    def __init__(self, stream: TextIO | None) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            if self._stream is not None:
                self._stream.write(text)
        except (OSError, ValueError):
            # Closed, broken or full: there is nowhere left to say it, and the command's own
            # exit status still tells how it ended.
            pass
        return len(text)

    def flush(self) -> None:
        try:
            if self._stream is not None:
                self._stream.flush()
        except (OSError, ValueError):
            # As in write: nowhere left to say it.
            pass

    def isatty(self) -> bool:
        return self._stream is not None and self._stream.isatty()

    def __getattr__(self, name: str) -> object:
        if self._stream is None:
            raise AttributeError(name)
        return getattr(self._stream, name)


def guard_streams() -> tuple[object, object]:
    """Put GuardedStdout and QuietStderr in place; returns the streams they stand for, for
    `restore_streams`."""
    before = (sys.stdout, sys.stderr)
    sys.stdout = GuardedStdout(sys.stdout)  # type: ignore[assignment]
    sys.stderr = QuietStderr(sys.stderr)  # type: ignore[assignment]
    return before


def restore_streams(before: tuple[object, object]) -> None:
    sys.stdout, sys.stderr = before  # type: ignore[assignment]


def reader_gone() -> int:
    """The reader of stdout went away: end quietly with 141."""
    _point_stdout_at_nothing()
    return ExitCode.READER_GONE


def output_failed(failure: OutputFailed) -> int:
    """stdout cannot be written: say so on stderr, where it can be, and end with 251."""
    _point_stdout_at_nothing()
    sys.stderr.write(f"swarmdeck: cannot write the output: {failure}\n")
    sys.stderr.flush()
    return int(UNWRITABLE_EXIT)


def flushed() -> bool:
    """Whether what is buffered for stdout reached it: false when its reader went away.
    OutputFailed, when it cannot be written otherwise."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        return False
    return True


def _point_stdout_at_nothing() -> None:
    """stdout's descriptor on /dev/null, so the interpreter's last flush of what is still
    buffered finds nowhere to fail; nothing to do where stdout was closed from the start."""
    try:
        fileno = sys.__stdout__.fileno() if sys.__stdout__ is not None else None
    except (OSError, ValueError):
        fileno = None
    if fileno is None:
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fileno)
    os.close(devnull)
