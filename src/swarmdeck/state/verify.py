"""Opening the state file safely: look inside before SQLite writes, and refuse what is not ours.

A file at the state path that is not a healthy swarmdeck database is reported as one line and
left exactly as it was: never repaired, never replaced. quick_check runs once per change of the
file; a stamp beside it (VERIFIED_SUFFIX) remembers the file as it was when it passed.
"""

from __future__ import annotations

import os
import sqlite3
import stat
import time

from swarmdeck.cache_settle import stamp_holds, write_stamp
from swarmdeck.errors import StateError
from swarmdeck.ledger_mark import LedgerMark, read_mark, readers_without_log
from swarmdeck.regular_files import NotRegularFile
from swarmdeck.state.refusals import MOVE_ASIDE, corrupt, disk_full, emptied, is_corruption
from swarmdeck.state.schema import latest_version, newer, stored_version

SQLITE_MAGIC = b"SQLite format 3\x00"


def refuse_emptied(path: str, mark: LedgerMark) -> None:
    """Refuse a missing or empty file where the mark says a ledger was."""
    try:
        size = os.stat(path).st_size
    except FileNotFoundError:
        raise emptied(path, mark, "is missing") from None
    except OSError:
        return  # inspect has read it: a file that cannot be read is refused there
    if size == 0:
        raise emptied(path, mark, "is empty")



_URI_SAFE = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-~/")
"""What a file URI keeps as it is: urllib.parse.quote's unreserved characters and "/"."""


def file_uri(path: str) -> str:
    """`PurePosixPath(path).as_uri()` for an absolute path: "file://" and its bytes quoted."""
    return "file://" + "".join(
        chr(byte) if byte in _URI_SAFE else f"%{byte:02X}" for byte in os.fsencode(path)
    )


def _inspection_uri(path: str, header: bytes) -> tuple[str, bool]:
    """How to look inside without leaving a trace; second item: whether WAL content is ignored.

    A read-only connection to a WAL-mode file creates -wal and -shm files and leaves them
    behind, so when the file has none we read the main file as immutable. Rollback-journal
    files (header bytes 18-19 == 1) are read plainly read-only: that creates nothing.
    """
    uri = file_uri(os.path.realpath(path)) + "?mode=ro"
    wal_mode = header[18] == 2 or header[19] == 2
    if not wal_mode:
        return uri, False
    wal, shm = path + "-wal", path + "-shm"
    if os.path.exists(wal) and os.path.exists(shm):
        return uri, False
    return uri + "&immutable=1", os.path.exists(wal) and os.stat(wal).st_size > 0


def make_private(path: str) -> None:
    """Create the database file 0600 before SQLite does (SQLite gives its -wal and -shm files
    the database's mode), and narrow an existing one of this user's, with its siblings."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600))
        return
    except FileExistsError:
        pass  # an existing store: narrowed below
    except OSError as error:
        raise StateError(
            f"state database {path} cannot be created ({error.strerror}); "
            "set SWARMDECK_STATE_DIR to a writable folder"
        ) from None
    for item in (path, path + "-wal", path + "-shm"):
        try:
            st = os.lstat(item)
            if st.st_uid == os.geteuid() and st.st_mode & 0o077 and stat.S_ISREG(st.st_mode):
                os.chmod(item, 0o600)
        except OSError:
            continue  # a sibling that is not there yet is created with the database's mode


VERIFIED_SUFFIX = ".verified"
"""Beside the state file: its identity when it last passed quick_check, a stamp under the one
cache rule (cache_settle.py): believed only once the file had settled when it was written."""


def _verified_as_is(path: str, status: os.stat_result) -> bool:
    """Whether the file is exactly as it was when it last passed quick_check.

    Any write that reaches the main file (a checkpoint, a copy, a restore, damage from outside
    SQLite) changes its change time, and a replaced file has another inode; the WAL's frames
    carry checksums of their own, so a torn frame is never read as data.
    """
    return stamp_holds(path + VERIFIED_SUFFIX, path, status)


def _remember_verified(path: str, status: os.stat_result) -> None:
    """Record the file as it was before a quick_check that it passed; without the stamp the
    next start verifies again: slower, never less safe."""
    write_stamp(path + VERIFIED_SUFFIX, path, status)


def quick_check(conn: sqlite3.Connection) -> list[str]:
    return [row[0] for row in conn.execute("PRAGMA quick_check").fetchall()]


def ledger_mark_of(path: str) -> LedgerMark | None:
    """The ledger mark beside the state file at `path` (ledger_mark.read_mark); StateError when
    something other than a regular file is there."""
    try:
        return read_mark(path)
    except NotRegularFile as error:
        raise StateError(
            f"ledger mark {error.path}: {error}; swarmdeck left it untouched: {MOVE_ASIDE}"
        ) from None


def inspect(path: str, verify: bool, lock_timeout: float) -> None:
    """Refuse, before SQLite opens it for writing, any file at `path` that is not ours and sound.

    Nothing is written here but the verification stamp: a missing or empty file is left for
    setup, anything else is read through a read-only connection that creates no sibling files.
    `verify` runs quick_check once per change of the file (see _verified_as_is), not on every
    open (its cost on a grown file: bench/results/runner.md).
    """
    from swarmdeck.regular_files import NotRegularFile, open_regular

    try:
        fd = open_regular(path)
    except FileNotFoundError:
        return
    except NotRegularFile as error:
        raise StateError(f"state database {path}: {error}; {MOVE_ASIDE}") from None
    except OSError as error:
        raise StateError(
            f"state database {path} cannot be read ({error.strerror}); "
            f"swarmdeck left it untouched: check its permissions or {MOVE_ASIDE}"
        ) from error
    try:
        status = os.fstat(fd)
        if status.st_size == 0:
            return
        header = os.pread(fd, 100, 0)
    except OSError as error:
        raise StateError(
            f"state database {path} cannot be read ({error.strerror}); "
            f"swarmdeck left it untouched: check its permissions or {MOVE_ASIDE}"
        ) from error
    finally:
        os.close(fd)
    if not header.startswith(SQLITE_MAGIC):
        raise StateError(
            f"{path} is not a SQLite database (it starts with {header[:16]!r}); "
            f"swarmdeck left it untouched: {MOVE_ASIDE}"
        )
    if len(header) < 100:
        raise corrupt(path, f"only {len(header)} bytes")
    _refuse_a_log_lost_under_readers(path, status)
    if _verified_as_is(path, status):
        # The main file is byte for byte the one that was found to be ours, of a schema this
        # version reads, and sound: looking inside again would only cost a second connection.
        # What the WAL may hold since is read by the store's own connection, whose migration
        # check still refuses a schema newer than this version before anything is written.
        return
    for pause in _INDEX_PAUSES:
        if _look_inside(path, header, status, verify, lock_timeout):
            return
        time.sleep(pause)
    raise StateError(
        f"state database {path} has a write-ahead log but no -shm index beside it; "
        f"swarmdeck left it untouched: {MOVE_ASIDE}"
    )


LOST_LOG_PATIENCE = 3.0
"""Seconds a process must stay cut off from the log before the file is refused for it. A
connection being made holds the file's lock a moment before it takes its index, longer on a
starved machine (one of 100 runs started at once on 2 cores held it past a second); one whose
log was deleted under it holds it until it ends."""


def _refuse_a_log_lost_under_readers(path: str, status: os.stat_result) -> None:
    """Refuse a store whose -wal or -shm was deleted while other processes had it open.

    Opening it would make a fresh log and index beside what those processes still write to:
    the rows written since the last checkpoint, running jobs' among them, would be out of reach
    and their ids handed out again. A process is taken for cut off only once it has held the
    file without the index for LOST_LOG_PATIENCE; the look ends when none is left, or when each
    one seen came and went within that time.
    """
    first_seen: dict[int, float] = {}
    started = time.monotonic()
    pause = _INDEX_PAUSES[0]
    while True:
        now = time.monotonic()
        lost = readers_without_log(path, status)
        first_seen = {pid: first_seen.get(pid, now) for pid in lost}
        stuck = [pid for pid, since in first_seen.items() if now - since >= LOST_LOG_PATIENCE]
        if stuck:
            break
        if not lost or now - started >= 4 * LOST_LOG_PATIENCE:
            return
        time.sleep(pause)
        pause = min(2 * pause, _INDEX_PAUSES[-1])
    pids = ", ".join(map(str, stuck[:5])) + (", …" if len(stuck) > 5 else "")
    raise StateError(
        f"state database {path}: its write-ahead log (-wal, -shm) was deleted while process"
        f" {pids} still had it open, so what they wrote since the last checkpoint, running jobs"
        " among it, is out of reach; swarmdeck left it untouched: let those processes end"
        f" (fuser {path}) and check the ledger with `swarmdeck status`, or {MOVE_ASIDE}"
    )


_INDEX_PAUSES = (0.02, 0.05, 0.1, 0.2, 0.4)
"""How long a log without its index is waited for before the file is refused as a copy missing
a part: a last connection removes -shm a moment before -wal, and a first one makes them one
after the other, so another process can see that state briefly while the file is in use."""


def _look_inside(
    path: str, header: bytes, status: os.stat_result, verify: bool, lock_timeout: float
) -> bool:
    """Check the file through a read-only connection; False when its tables may all lie in a
    log whose index is missing, so that what the main file holds alone proves nothing yet."""
    uri, wal_ignored = _inspection_uri(path, header)
    try:
        conn = sqlite3.connect(uri, uri=True, timeout=lock_timeout, isolation_level=None)
    except sqlite3.Error as error:
        raise disk_full(path, error) or StateError(
            f"state database {path} cannot be opened ({error}); swarmdeck left it untouched: "
            f"{MOVE_ASIDE}"
        ) from error
    try:
        stored = stored_version(conn, path)
        if stored == 0 and wal_ignored:
            return False
        if stored > latest_version():
            raise newer(path, stored)
        if verify and not _verified_as_is(path, status):
            problems = quick_check(conn)
            if problems != ["ok"]:
                raise corrupt(path, "; ".join(problems[:3]))
            _remember_verified(path, status)
        return True
    except sqlite3.Error as error:
        if is_corruption(error):
            raise corrupt(path, str(error)) from error
        raise disk_full(path, error) or StateError(
            f"state database {path} cannot be read ({error}); swarmdeck left it untouched: "
            f"{MOVE_ASIDE}"
        ) from error
    finally:
        conn.close()


