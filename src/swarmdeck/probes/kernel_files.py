"""Reading the kernel's small generated files (cgroup lists, per-thread stat lines) cheaply.

Every refresh reads a few such files per supervised thread and cage, so they are read with
os.open/os.read/os.close by string path, about half the cost of `open()` and `pathlib`. A
process that reads the same files at every refresh calls `hold_open` once: each file then stays
open and is read again with `pread` at offset 0, which makes the kernel generate it afresh
without a path look-up, open or close. A held file never goes stale unseen: the kernel refuses
a read once what it describes is gone (ESRCH, ENODEV), and the path is then opened afresh, so a
reused pid is read as its new process. `release_unread` closes what a round did not read.
"""

from __future__ import annotations

import os
import threading

CHUNK = 65536
KERNEL_ROOTS = ("/proc/", "/sys/")
"""Where the files that are generated at each read live: only these are held. Any other path
(a test's own tree standing in for /proc, which it rewrites) is opened for each read."""
MAX_HELD = 768
"""The most files held open at once; past it a file is opened for each read, as without
`hold_open`. Seven per running job and a few for the host: room for a hundred jobs, and well
under the usual limit of 1024 open files."""


class _HeldFiles:
    """The open files by path, and the paths read since the last `release_unread`."""

    def __init__(self) -> None:
        self.fds: dict[str, int] = {}
        self.read: set[str] = set()
        # Held across the read too: a descriptor is never closed (and its number reused by
        # another open) while another thread reads it.
        self.lock = threading.Lock()


_held: _HeldFiles | None = None


def hold_open() -> None:
    """From now on keep the files read open between reads (see the module's docstring)."""
    global _held
    if _held is None:
        _held = _HeldFiles()


def stop_holding() -> None:
    """Close every held file; from now on each read opens its file again."""
    global _held
    held, _held = _held, None
    if held is not None:
        with held.lock:
            for fd in held.fds.values():
                os.close(fd)
            held.fds.clear()


def release_unread() -> None:
    """Close the held files that were not read since the last call."""
    held = _held
    if held is None:
        return
    with held.lock:
        for path in [path for path in held.fds if path not in held.read]:
            os.close(held.fds.pop(path))
        held.read.clear()


def held_count() -> int:
    """How many files are held open now."""
    return 0 if _held is None else len(_held.fds)


def read_bytes(path: str) -> bytes | None:
    """The whole file, or None when it cannot be opened or read (gone, or never there)."""
    held = _held
    if held is not None and path.startswith(KERNEL_ROOTS):
        with held.lock:
            return _read_held(held, path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        return _read_from_start(fd)
    finally:
        os.close(fd)


def _read_held(held: _HeldFiles, path: str) -> bytes | None:
    fd = held.fds.get(path)
    if fd is not None:
        data = _read_from_start(fd)
        if data is not None:
            held.read.add(path)
            return data
        # What it described is gone: the path is opened afresh below.
        os.close(held.fds.pop(path))
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    data = _read_from_start(fd)
    if data is None or len(held.fds) >= MAX_HELD:
        os.close(fd)
        return data
    held.fds[path] = fd
    held.read.add(path)
    return data


def _read_from_start(fd: int) -> bytes | None:
    """The whole file from its first byte (which makes the kernel generate a held file
    afresh), read until a read gives nothing; None when a read is refused.

    A short read is no end: the kernel hands a generated file over a page at a time (a cage's
    `tasks` of 1,500 threads came as 4092 bytes of its 9006), so the empty read that follows
    the last page is what says it is whole. The follow-up is cheap, and on a held
    file the kernel continues from where the first read stopped rather than generating the
    file again."""
    try:
        data = os.pread(fd, CHUNK, 0)
        if not data:
            return data
        parts, offset = [data], len(data)
        while chunk := os.pread(fd, CHUNK, offset):
            parts.append(chunk)
            offset += len(chunk)
        return parts[0] if len(parts) == 1 else b"".join(parts)
    except OSError:
        return None
