"""Incremental reading of append-only JSONL transcripts: each read returns only what was appended.

Claude Code appends to its transcripts for hours; rereading hundreds of megabytes on every refresh
would make the control room slower the longer a swarm runs. A tail remembers the byte offset it
reached, keeps a half-written last line for the next read, notices truncation and replacement (the
file then starts over), and skips a corrupt line without losing the good line written after it.
"""

from __future__ import annotations

import errno
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from swarmdeck.regular_files import open_regular

CHUNK = 4 * 1024 * 1024
MAX_PARTIAL = 64 * 1024 * 1024
HEAD_BYTES = 64
RECOVERY_TRIES = 32
SKIPPED_PREFIX = '{"type":"file-history-snapshot"'
"""Undo snapshots: often large, and nothing in them is shown; not even parsed."""


@dataclass
class TailRead:
    """What one read of a transcript produced."""

    records: list[dict[str, Any]] = field(default_factory=list)
    reset: bool = False
    """The file was truncated, replaced or removed: `records` start again from its beginning."""
    gone: bool = False
    """The file no longer exists."""
    skipped: int = 0
    """Corrupt lines skipped in this read."""
    bytes_read: int = 0


def parse_line(raw: str | bytes) -> dict[str, Any] | None:
    """One JSONL line as a dict; a line glued to the rest of a crashed write is recovered.

    A writer that died mid-line leaves `{"type":"us` with no newline; the next writer's complete
    line is then appended to it. The good record starts at a later `{"`, so try those positions.
    """
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    if isinstance(value, dict):
        return value
    start = 1
    for _ in range(RECOVERY_TRIES):
        pos = text.find('{"', start)
        if pos < 0:
            return None
        try:
            value = json.loads(text[pos:])
        except ValueError:
            start = pos + 1
            continue
        return value if isinstance(value, dict) else None
    return None


class JsonlTail:
    """A reader that remembers how far into one JSONL file it got.

    Args:
        path: The JSONL file.
        max_partial: Bytes of an unfinished line kept for the next read; a longer line is
            skipped (counted once) so one runaway write cannot hold the reader's memory.
    """

    def __init__(self, path: Path, *, max_partial: int = MAX_PARTIAL) -> None:
        self.path = path
        self.max_partial = max_partial
        self.offset = 0
        """Bytes of the file consumed so far, the kept partial line included."""
        self.mtime = 0.0
        self.size = 0
        self._identity: tuple[int, int] | None = None
        self._head = b""
        self._partial = b""
        self._dropping = False
        """The start of the current line was dropped as too long: skip to its end."""

    def changed(self) -> bool:
        """True when the file looks different from what was last read (cheap: one stat)."""
        try:
            st = os.stat(self.path)
        except OSError:
            return self._identity is not None
        return (
            (st.st_dev, st.st_ino) != self._identity
            or st.st_size != self.size
            or st.st_mtime != self.mtime
        )

    def read(self) -> TailRead:
        """Read what was appended since the last call; start over if the file was replaced."""
        try:
            fd = open_regular(self.path)
        except OSError:  # missing, or a FIFO or device in its place: nothing to read
            gone = self._identity is not None
            self._forget()
            return TailRead(reset=gone, gone=True)
        try:
            return self._read_open(fd)
        finally:
            os.close(fd)

    def _forget(self) -> None:
        self.offset = 0
        self.size = 0
        self.mtime = 0.0
        self._identity = None
        self._head = b""
        self._partial = b""
        self._dropping = False

    def _read_open(self, fd: int) -> TailRead:
        st = os.fstat(fd)
        identity = (st.st_dev, st.st_ino)
        reset = False
        if self._identity is not None and (
            identity != self._identity
            or st.st_size < self.offset
            or (self._head and os.pread(fd, len(self._head), 0) != self._head)
        ):
            reset = True
            self._forget()
        self._identity = identity
        self.size = st.st_size
        self.mtime = st.st_mtime
        result = TailRead(reset=reset)
        if st.st_size == self.offset:
            return result
        if len(self._head) < HEAD_BYTES:
            self._head = os.pread(fd, HEAD_BYTES, 0)
        position = self.offset
        while position < st.st_size:
            data_at = _next_data(fd, position, st.st_size)
            if data_at > position:
                # A hole reads as NUL bytes, which no JSON line holds: skip it unread, and the
                # line it cuts with it.
                if self._partial or not self._dropping:
                    result.skipped += bool(self._partial)
                self._partial = b""
                self._dropping = True
                position = data_at
                continue
            chunk = os.pread(fd, min(CHUNK, st.st_size - position), position)
            if not chunk:
                break
            position += len(chunk)
            result.bytes_read += len(chunk)
            self._consume(chunk, result)
        self.offset = position
        return result

    def _consume(self, chunk: bytes, result: TailRead) -> None:
        data = self._partial + chunk if self._partial else chunk
        if self._dropping:
            end = data.find(b"\n")
            if end < 0:
                self._partial = b""
                return
            data = data[end + 1 :]
            self._dropping = False
        cut = data.rfind(b"\n")
        if cut < 0:
            self._partial = data
            lines: list[str] = []
        else:
            # A newline never falls inside a UTF-8 character: decode the complete lines at once.
            self._partial = data[cut + 1 :]
            lines = data[:cut].decode("utf-8", "replace").split("\n")
        if len(self._partial) > self.max_partial:
            result.skipped += 1
            self._partial = b""
            self._dropping = True
        for raw in lines:
            if not raw or raw.startswith(SKIPPED_PREFIX) or raw.isspace():
                continue
            record = parse_line(raw)
            if record is None:
                result.skipped += 1
            else:
                result.records.append(record)


def _next_data(fd: int, position: int, size: int) -> int:
    """Where data starts at or after `position` (`size` when only a hole is left).

    A sparse file can claim gigabytes it never wrote; SEEK_DATA finds what was written without
    reading the zeros. Where the file system cannot tell, every byte counts as data.
    """
    try:
        return min(os.lseek(fd, position, os.SEEK_DATA), size)
    except OSError as error:
        return size if error.errno == errno.ENXIO else position
