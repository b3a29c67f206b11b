"""The light hook call's writer: a PreToolUse input to a file of its own, beside the store.

A Bash call that matches no heavy pattern is most of what hooks see, and loading SQLite alone
costs such a call a third of its budget; so its input is written, as read, to a file of its own
in the state folder (the format and the fold: hook_events.py, which reads these files back into
hook_events). This module is the whole of the spool that the light path imports: os and time,
nothing more (no typing, json or sqlite3), which tests/hooks/test_hook_imports.py checks.
"""

from __future__ import annotations

import os
import time

from swarmdeck import paths

SPOOL_NAME = "hook-spool"
"""The one spool file an older swarmdeck appended every light call to; folded when found."""
FOLDING_PREFIX = "hook-spool.folding."
"""A spool file an older swarmdeck's fold took and left (it failed, or died before removing it)."""
CALL_PREFIX = "hook-spool.call."
"""A spooled call: `CALL_PREFIX` + the time it was written (ns, 20 digits) + `.PID.COUNT`."""
PART_PREFIX = "hook-spool.part."
"""A call's file while its writer writes it; renamed to `CALL_PREFIX` once whole."""
MAX_PENDING = 4096
"""Call files waiting beyond which a call records through the database; also the most call
files one fold takes (the oldest first), so a fold's work inside the write lock is bounded."""
APPLICATION_ID = int.from_bytes(b"SWDK", "big")
"""state.APPLICATION_ID: calls are spooled only beside a file that says it is swarmdeck's."""
SQLITE_MAGIC = b"SQLite format 3\x00"
DISPATCH_TOOLS = frozenset({"Agent", "Task"})
"""The tool that spawns a subagent: `Task` until Claude Code 2.1.63, `Agent` since; the hooks
guard its calls and the transcript reader counts them, so both must know both names (here, on
the light path, since the hook entry point checks every call against it)."""
MAX_SPOOLED_INPUT = 64 * 1024
"""A larger input is recorded through the database, trimmed there."""
_PART_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_written = [0]
"""Calls this process spooled: the last part of a call file's name, so no two share one."""


def field_text(data: dict[str, object], key: str) -> str | None:
    """A field of a hook's input as text (safe_text): None when missing, empty or not a string."""
    value = data.get(key)
    return safe_text(value) if isinstance(value, str) and value else None


def safe_text(text: str) -> str:
    """`text` as UTF-8 can hold it: each half of a surrogate pair left alone (what JSON's
    `\\ud83d` reads as: Node's `JSON.stringify` of an emoji cut in two) becomes U+FFFD."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        # Through UTF-16, which pairs the halves that make a character and replaces the rest.
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text


def spool_path(db_path: str) -> str:
    """The spool file an older swarmdeck appended to beside the state database `db_path`."""
    return os.path.join(os.path.dirname(db_path), SPOOL_NAME)


def record_line(raw: bytes, received_at: float) -> bytes:
    """One call's record, with its newlines (see module doc); `raw` is JSON json read whole."""
    return b'\n{"received_at": %s, "input": %s}\n' % (
        repr(received_at).encode(),
        raw.replace(b"\n", b" "),
    )


def append(raw: bytes, received_at: float) -> bool:
    """Spool a light PreToolUse call; False when it must be recorded through the database.

    That is when the input is not a plain UTF-8 object, the store is not one a plain insert
    would write to (not set up yet, not swarmdeck's, not a database: the database path sets it
    up or says what is wrong), the state folder is not private, MAX_PENDING calls wait already,
    or the write fails. It takes no lock and never waits.
    """
    if len(raw) > MAX_SPOOLED_INPUT or not _plain_object(raw):
        return False
    db = paths.state_db_path()
    folder = os.path.dirname(db)
    if not store_is_set_up(db) or paths.state_dir_refusal(folder) is not None:
        return False
    if _pending(folder) >= MAX_PENDING:
        return False
    _written[0] += 1
    name = f"{time.time_ns():020d}.{os.getpid()}.{_written[0]}"
    return _write_call(
        os.path.join(folder, PART_PREFIX + name),
        os.path.join(folder, CALL_PREFIX + name),
        record_line(raw, received_at),
    )


def _pending(folder: str) -> int:
    """Call files waiting in `folder`, counted up to MAX_PENDING."""
    count = 0
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.name.startswith(CALL_PREFIX):
                    count += 1
                    if count >= MAX_PENDING:
                        break
    except OSError:
        return MAX_PENDING  # a folder that cannot be listed cannot be folded either
    return count


def _write_call(part: str, call: str, record: bytes) -> bool:
    """Write `record` as the new file `part`, then rename it to `call`: whether it got there."""
    try:
        fd = os.open(part, _PART_FLAGS, paths.PRIVATE_FILE_MODE)
    except OSError:
        return False  # a full disk, a name taken: the database path says more
    try:
        whole = os.write(fd, record) == len(record)
    except OSError:
        whole = False
    finally:
        os.close(fd)
    if whole:
        try:
            # Refused when a fold took the part file for abandoned and removed it.
            os.rename(part, call)
            return True
        except OSError:
            pass
    try:
        os.unlink(part)
    except OSError:
        return False  # removed already (by a fold): nothing of this call is left in the spool
    return False


def _plain_object(raw: bytes) -> bool:
    """Whether `raw` is an object in UTF-8 without a mark, as a spool line is read: json also
    reads a marked or a UTF-16 or UTF-32 input, which in a line of UTF-8 would be no JSON at
    all, and the fold would skip the call as a damaged line. Such an input has a mark before
    its brace or a zero byte, which no UTF-8 JSON text holds."""
    return raw.lstrip(b" \t\n\r")[:1] == b"{" and b"\x00" not in raw


def store_is_set_up(db: str) -> bool:
    """Whether `db` is a regular file whose SQLite header names swarmdeck's application and a
    schema version: what record.py's plain insert asks the database, read from the header."""
    from swarmdeck.regular_files import open_regular

    try:
        fd = open_regular(db)
    except OSError:
        return False
    try:
        header = os.read(fd, 100)
    except OSError:
        return False
    finally:
        os.close(fd)
    return (
        len(header) == 100
        and header.startswith(SQLITE_MAGIC)
        and int.from_bytes(header[68:72], "big") == APPLICATION_ID
        and int.from_bytes(header[60:64], "big") >= 1
    )
