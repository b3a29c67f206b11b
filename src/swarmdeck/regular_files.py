"""Opening a file that someone else may have replaced: never block on it, never read it whole.

A config, a cache or a transcript path can name a FIFO (open blocks until a writer comes), a
device (`/dev/zero` never ends) or a huge sparse file. Every such file is opened non-blocking,
checked to be a regular file on the open descriptor (no race between the check and the read),
and read up to a limit, so a hostile or clumsy file costs a few system calls, never a hang.
"""

from __future__ import annotations

import os
import stat

OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


class NotRegularFile(OSError):
    """The path names something other than a regular file (a FIFO, a device, a socket)."""

    def __init__(self, path: str, kind: str) -> None:
        super().__init__(f"it is {kind}, not a regular file")
        self.path = path
        self.kind = kind

    def __str__(self) -> str:
        return f"it is {self.kind}, not a regular file"


class FileTooLarge(OSError):
    """The file holds more than the reader accepts."""

    def __init__(self, path: str, limit: int) -> None:
        super().__init__(f"it is over {limit} bytes")
        self.path = path
        self.limit = limit

    def __str__(self) -> str:
        return f"it is over {self.limit} bytes"


def kind_of(mode: int) -> str:
    """A file type in words, for messages."""
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISDIR(mode):
        return "a directory"
    return "not a plain file"


def open_regular(path: str | os.PathLike[str], flags: int = 0) -> int:
    """A descriptor on `path`, opened without blocking; NotRegularFile unless a regular file.

    The descriptor is left non-blocking, which changes nothing for a regular file.
    """
    fd = os.open(path, OPEN_FLAGS | flags)
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        os.close(fd)
        raise
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise NotRegularFile(os.fspath(path), kind_of(mode))
    return fd


def read_regular(path: str | os.PathLike[str], limit: int) -> bytes:
    """The whole content of a regular file of at most `limit` bytes; FileTooLarge beyond."""
    fd = open_regular(path)
    try:
        if os.fstat(fd).st_size > limit:
            raise FileTooLarge(os.fspath(path), limit)
        chunks: list[bytes] = []
        left = limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > limit:
        raise FileTooLarge(os.fspath(path), limit)
    return data


def replace_private(path: str | os.PathLike[str], data: bytes) -> None:
    """Write `data` as the file `path`, readable by its owner alone (0600): see replace_whole."""
    replace_whole(path, data, 0o600)


def replace_whole(path: str | os.PathLike[str], data: bytes, mode: int) -> None:
    """Write `data` as the file `path` (`mode`, less the umask) in one rename, so a reader sees
    the old file or the new one, never a part; the temporary beside it is created fresh (never
    through a link someone left there) and removed again when the write fails. Raises OSError."""
    target = os.fspath(path)
    folder, name = os.path.split(target)
    temporary = os.path.join(folder, f".{name}.{os.getpid()}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(temporary, flags, mode)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
        os.replace(temporary, target)
    except OSError:
        _discard(temporary)
        raise


def _discard(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        return  # never made, or already gone
