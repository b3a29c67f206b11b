"""Why the state file cannot be used: each cause as one StateError line saying what to do.

SQLite reports most trouble as an error code; these functions tell a full disk, a file that
cannot be written, damage and a lock held too long apart, for the opener and the store alike.
"""

from __future__ import annotations

import os
import sqlite3
from typing import TYPE_CHECKING

from swarmdeck.errors import StateError
from swarmdeck.ledger_mark import LEDGER_SUFFIX

if TYPE_CHECKING:
    from swarmdeck.ledger_mark import LedgerMark

BUSY_CODES = {5, 6}  # SQLITE_BUSY, SQLITE_LOCKED (primary codes)
_CORRUPT_CODES = {11, 26}  # SQLITE_CORRUPT, SQLITE_NOTADB
_FULL_CODE = 13  # SQLITE_FULL
_READONLY_CODE = 8  # SQLITE_READONLY
_IOERR_CODE = 10  # SQLITE_IOERR
_NEARLY_FULL = 64 * 1024
"""Free bytes under which an I/O error of SQLite is taken for a full disk."""
MOVE_ASIDE = "move it aside or set SWARMDECK_STATE_DIR to another folder"
MAKE_WRITABLE = (
    "make the state folder and its state.db, state.db-wal and state.db-shm writable (an"
    " immutable flag shows in `lsattr`, a read-only mount in `findmnt`) or set"
    " SWARMDECK_STATE_DIR to another folder"
)
"""What to do about a state folder or file that cannot be written."""


def error_code(error: sqlite3.Error) -> int:
    return (getattr(error, "sqlite_errorcode", 0) or 0) & 0xFF


def is_corruption(error: sqlite3.Error) -> bool:
    return isinstance(error, sqlite3.DatabaseError) and error_code(error) in _CORRUPT_CODES


def disk_full(path: str, error: sqlite3.Error) -> StateError | None:
    """A StateError saying the disk is full, when that is why SQLite failed; else None.

    SQLite says "database or disk is full" mid-write, but only "disk I/O error" when it cannot
    even create its write-ahead log: the free space on the state folder's disk tells which.
    """
    code = error_code(error)
    if code == _FULL_CODE or (code == _IOERR_CODE and _nearly_full(path)):
        return StateError(
            f"state database {path}: its disk is full ({error}); nothing more was written and"
            " nothing recorded was lost: free space there or set SWARMDECK_STATE_DIR elsewhere"
        )
    return None


def cannot_write(path: str, error: BaseException) -> StateError | None:
    """A StateError saying why a write to the state file failed, when the cause is the disk or
    the file system rather than the database: a full disk, a file, log or folder that cannot
    be written (an immutable flag, a read-only mount), an I/O error; else None.

    SQLite opens a file it may not write read-only and says so only at the first write; a file
    made immutable while SQLite has it open fails that write with an I/O error.
    """
    if not isinstance(error, sqlite3.Error):
        return None
    code = error_code(error)
    if code == _READONLY_CODE:
        return StateError(
            f"state database {path} cannot be written ({error}); nothing was written: "
            f"{MAKE_WRITABLE}"
        )
    if code == _IOERR_CODE:
        return disk_full(path, error) or StateError(
            f"state database {path} could not be written ({error}); what was being written"
            f" was not: check the disk (dmesg), then {MAKE_WRITABLE}"
        )
    return disk_full(path, error)


def _nearly_full(path: str) -> bool:
    """Whether the disk of the state file at `path` has under _NEARLY_FULL bytes free."""
    return _free_bytes(os.path.dirname(path) or ".") < _NEARLY_FULL


def _free_bytes(folder: str) -> int:
    try:
        st = os.statvfs(folder)
    except OSError:
        return 1 << 62  # cannot tell: not taken for a full disk
    return st.f_bavail * st.f_frsize


def corrupt(path: str, detail: str) -> StateError:
    return StateError(
        f"state database {path} is corrupt ({detail}); swarmdeck left it untouched: "
        f"{MOVE_ASIDE}, or try `sqlite3 {path} .recover`"
    )



def emptied(path: str, mark: LedgerMark, what: str) -> StateError:
    return StateError(
        f"state database {path} {what}, but ledger {mark.ledger_id} was kept there (says"
        f" {path}{LEDGER_SUFFIX}): it was truncated, removed or replaced, or lost its"
        " write-ahead log, and starting a new ledger would forget every job still running;"
        f" swarmdeck left it as it is: restore it from a backup, or remove"
        f" {path}{LEDGER_SUFFIX} to start a new, empty ledger"
    )


