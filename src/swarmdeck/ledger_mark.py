"""What tells that the state file is still the ledger it was: a mark beside it, and its readers.

SQLite sets up a new, empty database in any file that is empty or missing, and makes a fresh
write-ahead log where it finds none. So a state file truncated, removed or replaced, or whose
-wal and -shm were deleted under running jobs, would quietly become a new ledger: the running
jobs forgotten and unbooked, their ids handed out again. Two facts catch it: the mark,
`state.db.ledger` beside the file (the ledger's id and the file's device and inode; a mismatch
is refused in one line, the file untouched), and the readers' locks in /proc/locks
(`readers_without_log`).
"""

from __future__ import annotations

import os

from swarmdeck.regular_files import NotRegularFile, read_regular, replace_private

LEDGER_SUFFIX = ".ledger"
"""Beside the state file: `LEDGER_ID DEVICE INODE`, the ledger it holds and the file's identity."""
MAX_MARK = 256
"""A mark is one short line; a longer file is no mark (it proves nothing)."""

_SHARED_FIRST = 0x40000000 + 2
_SHARED_LAST = _SHARED_FIRST + 510 - 1
"""The bytes of the database file a SQLite reader holds a shared lock on (os_unix.c)."""
_SHM_ALIVE = 128
"""The byte of the -shm index every open connection holds a shared lock on ("DMS")."""


class LedgerMark:
    """The ledger a state file held when it was last opened, and that file's identity."""

    __slots__ = ("device", "inode", "ledger_id")

    def __init__(self, ledger_id: str, device: int, inode: int) -> None:
        self.ledger_id = ledger_id
        self.device = device
        self.inode = inode

    def __repr__(self) -> str:
        return f"LedgerMark({self.ledger_id!r}, {self.device}, {self.inode})"


def read_mark(db: str) -> LedgerMark | None:
    """The mark beside the state file `db`; None when there is none (a new state folder, or a
    store made before marks). A mark that cannot be read as one is None too: it proves nothing.

    Raises NotRegularFile when something else is there (a FIFO, whose open would wait for a
    writer, a device, a folder): the caller refuses in one line. The mark is opened without
    blocking and read up to MAX_MARK bytes (regular_files.read_regular)."""
    try:
        words = read_regular(db + LEDGER_SUFFIX, MAX_MARK).split()
    except NotRegularFile:
        raise
    except OSError:
        return None
    if len(words) != 3 or not words[1].isdigit() or not words[2].isdigit():
        return None
    try:
        ledger_id = words[0].decode("ascii")
    except UnicodeDecodeError:
        return None
    return LedgerMark(ledger_id, int(words[1]), int(words[2]))


def write_mark(db: str, ledger_id: str, status: os.stat_result) -> None:
    """Record that the state file `db`, as `status` found it, holds `ledger_id`."""
    text = f"{ledger_id} {status.st_dev} {status.st_ino}\n"
    try:
        replace_private(db + LEDGER_SUFFIX, text.encode("ascii"))
    except OSError:
        # A folder that cannot be written cannot have its ledger reset either; the next open
        # that can write records the mark.
        return


def readers_without_log(db: str, status: os.stat_result) -> list[int]:
    """Other processes that hold the state file `db` open (SQLite's shared lock) on a write-ahead
    log and index that are no longer the ones at its path; empty when there are none.

    Every SQLite connection to a WAL database holds a shared lock on the database file and
    another on byte 128 of its -shm index, as long as it is open. A process that holds the first
    but not the second on the -shm at the path now (or with no -wal there) uses a log and index
    that were deleted under it: what it writes no one else will read. /proc/locks is read once
    (no descriptor is opened on the files, since closing one would drop this process's own
    SQLite locks on them); a kernel that does not show the locks there leaves this check silent,
    never refusing a sound store."""
    try:
        with open("/proc/locks", "rb") as file:
            table = file.read()
    except OSError:
        return []
    shm = _identity(db + "-shm")
    wal_there = os.path.exists(db + "-wal")
    db_key = _lock_key(status.st_dev, status.st_ino)
    shm_key = None if shm is None else _lock_key(*shm)
    wanted = [b" " + key + b" " for key in (db_key, shm_key) if key is not None]
    readers: set[int] = set()
    alive: set[int] = set()
    for line in table.splitlines():
        if not any(key in line for key in wanted):
            continue  # another file's lock: most lines, on a machine with many readers
        words = line.split()
        if len(words) < 8 or words[1] != b"POSIX" or not words[4].isdigit():
            continue  # a waiter ("->"), another kind of lock, or a pid not of this namespace
        pid, key, first, last = int(words[4]), words[5], words[6], words[7]
        if key == db_key and _covers(first, last, _SHARED_FIRST, _SHARED_LAST):
            # A WRITE lock there is the last connection closing: it checkpoints and removes
            # the log and index itself, and is not cut off from them.
            if words[3] == b"READ":
                readers.add(pid)
        elif key == shm_key and _covers(first, last, _SHM_ALIVE, _SHM_ALIVE):
            alive.add(pid)
    readers.discard(os.getpid())
    lost = readers if not wal_there else readers - alive
    return sorted(lost)


def _identity(path: str) -> tuple[int, int] | None:
    try:
        status = os.stat(path)
    except OSError:
        return None
    return status.st_dev, status.st_ino


def _lock_key(device: int, inode: int) -> bytes:
    """How /proc/locks names a file: MAJOR:MINOR:INODE, the device numbers in hex."""
    return f"{os.major(device):02x}:{os.minor(device):02x}:{inode}".encode()


def _covers(first: bytes, last: bytes, low: int, high: int) -> bool:
    """Whether a lock on bytes first..last ("EOF": to the end) meets the range low..high."""
    if not first.isdigit():
        return False
    end = high if last == b"EOF" else int(last) if last.isdigit() else -1
    return int(first) <= high and end >= low
