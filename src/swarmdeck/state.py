"""The SQLite file all of swarmdeck shares: jobs ledger, peaks, alerts, findings, kills, hooks.

The app, the runners, the hooks and the watchdog read and write it at once, so it runs in WAL
mode and every write is an explicit transaction. `StateStore.transaction()` takes the write lock
up front (`BEGIN IMMEDIATE`): a read-check-write such as admission then sees no other writer
between its read and its write. A file at the state path that is not a healthy swarmdeck
database is reported as one line and left exactly as it was: never repaired, never replaced.
"""

from __future__ import annotations

import os
import stat
import time

# threading.local is this class (threading re-exports it); importing threading for it alone
# would cost every caged run 1 ms.
from _thread import _local as thread_local
from itertools import pairwise

from swarmdeck import paths, sqlite
from swarmdeck.cache_settle import stamp_holds, write_stamp
from swarmdeck.errors import StateError
from swarmdeck.ledger_mark import (
    LEDGER_SUFFIX,
    LedgerMark,
    read_mark,
    readers_without_log,
    write_mark,
)
from swarmdeck.records import dataclass
from swarmdeck.regular_files import NotRegularFile
from swarmdeck.text_paths import parent_of, tidy

# Not `from typing import TYPE_CHECKING`; and the state file's path is a plain string, since
# pathlib would cost every `swarmdeck run` 4 ms to import.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from os import PathLike

APPLICATION_ID = int.from_bytes(b"SWDK", "big")
"""Written to the SQLite header (`PRAGMA application_id`) so the file says whose it is."""

APPLICATION_NAME = "swarmdeck"
"""Written to `swarmdeck_meta` under key `application`."""

LOCK_TIMEOUT_S = 30.0
"""How long a write waits for another process's write lock before giving up."""
BEGIN_PAUSE_MIN = 0.0005
BEGIN_PAUSE_MAX = 0.004
"""The shortest and longest pause between two tries for the write lock (see _begin_immediate)."""

_SQLITE_MAGIC = b"SQLite format 3\x00"
_BUSY_CODES = {5, 6}  # SQLITE_BUSY, SQLITE_LOCKED (primary codes)
_CORRUPT_CODES = {11, 26}  # SQLITE_CORRUPT, SQLITE_NOTADB
_FULL_CODE = 13  # SQLITE_FULL
_READONLY_CODE = 8  # SQLITE_READONLY
_IOERR_CODE = 10  # SQLITE_IOERR
_NEARLY_FULL = 64 * 1024
"""Free bytes under which an I/O error of SQLite is taken for a full disk."""
_MOVE_ASIDE = "move it aside or set SWARMDECK_STATE_DIR to another folder"
MAKE_WRITABLE = (
    "make the state folder and its state.db, state.db-wal and state.db-shm writable (an"
    " immutable flag shows in `lsattr`, a read-only mount in `findmnt`) or set"
    " SWARMDECK_STATE_DIR to another folder"
)
"""What to do about a state folder or file that cannot be written."""

# Connections made by a parent process before a fork. Closing one in the child could disturb
# the parent's locks and WAL, so the child keeps a reference and never touches it again.
_INHERITED: list[sqlite.Connection] = []


def now() -> float:
    """Epoch seconds as REAL: the one unit for every time column in the store."""
    return time.time()


def insert(conn: sqlite.Connection, table: str, values: dict[str, object]) -> int:
    """Insert one row of `values` (column: value) into `table`; its new id."""
    columns = ", ".join(values)
    marks = ", ".join("?" * len(values))
    cursor = conn.execute(
        f"INSERT INTO {table} ({columns}) VALUES ({marks})", tuple(values.values())
    )
    assert cursor.lastrowid is not None
    return cursor.lastrowid


@dataclass(frozen=True)
class Migration:
    """One forward step of the schema.

    `apply` is SQL (several statements allowed) or a callable given the connection. It runs
    inside the migration's own `BEGIN IMMEDIATE` transaction with foreign keys off (checked
    with `PRAGMA foreign_key_check` before commit), so a table can be rebuilt the SQLite way.
    """

    version: int
    description: str
    apply: str | Callable[[sqlite.Connection], None]


_NOW_SQL = "((julianday('now') - 2440587.5) * 86400.0)"

# Job ids in dispatches, kill requests and peaks may name a job in another host's ledger,
# so they carry no foreign key.
_SCHEMA_V1 = f"""
CREATE TABLE jobs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    label TEXT,
    host TEXT,
    fingerprint TEXT,
    argv TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(argv)),
    cwd TEXT,
    state TEXT NOT NULL,
    pid INTEGER,
    start_ticks INTEGER,
    runner_pid INTEGER,
    runner_start_ticks INTEGER,
    booked INTEGER,
    cap INTEGER,
    admitted_via TEXT,
    oom_score_adj INTEGER,
    threads INTEGER,
    cgroup TEXT,
    created_at REAL NOT NULL DEFAULT {_NOW_SQL},
    started_at REAL,
    ended_at REAL,
    exit_code INTEGER,
    outcome TEXT,
    peak INTEGER,
    kernel_peak INTEGER,
    hit_ceiling INTEGER DEFAULT 0 CHECK (hit_ceiling IN (0, 1)),
    output_path TEXT,
    serial_marker_path TEXT,
    detached INTEGER DEFAULT 0 CHECK (detached IN (0, 1)),
    timeout REAL
);
CREATE INDEX jobs_by_state ON jobs (state);
CREATE INDEX jobs_by_fingerprint ON jobs (fingerprint);
CREATE INDEX jobs_by_created_at ON jobs (created_at);

CREATE TABLE peaks (
    fingerprint TEXT NOT NULL,
    job_id INTEGER,
    peak INTEGER NOT NULL,
    hit_ceiling INTEGER DEFAULT 0 CHECK (hit_ceiling IN (0, 1)),
    cap INTEGER,
    duration REAL,
    outcome TEXT,
    recorded_at REAL NOT NULL DEFAULT {_NOW_SQL}
);
CREATE INDEX peaks_by_fingerprint ON peaks (fingerprint, recorded_at);

CREATE TABLE alerts (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    key TEXT NOT NULL UNIQUE,
    level TEXT,
    source TEXT,
    host TEXT,
    message TEXT NOT NULL,
    created_at REAL NOT NULL DEFAULT {_NOW_SQL},
    last_seen_at REAL NOT NULL DEFAULT {_NOW_SQL},
    count INTEGER NOT NULL DEFAULT 1,
    acknowledged_at REAL,
    resolved_at REAL
);
CREATE INDEX alerts_by_resolved_at ON alerts (resolved_at);

CREATE TABLE findings (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    key TEXT NOT NULL UNIQUE,
    rule TEXT NOT NULL,
    subject TEXT,
    severity TEXT,
    message TEXT,
    first_seen_at REAL NOT NULL DEFAULT {_NOW_SQL},
    last_seen_at REAL NOT NULL DEFAULT {_NOW_SQL},
    count INTEGER NOT NULL DEFAULT 1,
    acknowledged_at REAL,
    resolved_at REAL
);
CREATE INDEX findings_by_rule ON findings (rule);
CREATE INDEX findings_by_resolved_at ON findings (resolved_at);

CREATE TABLE kill_requests (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id INTEGER,
    host TEXT,
    pid INTEGER NOT NULL,
    start_ticks INTEGER NOT NULL,
    user TEXT,
    command TEXT,
    reason TEXT,
    finding_key TEXT,
    state TEXT NOT NULL,
    requested_at REAL NOT NULL DEFAULT {_NOW_SQL},
    decided_at REAL,
    decided_by TEXT,
    result TEXT
);
CREATE INDEX kill_requests_by_state ON kill_requests (state);
CREATE INDEX kill_requests_by_finding_key ON kill_requests (finding_key);

CREATE TABLE dispatches (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    argv TEXT NOT NULL CHECK (json_valid(argv)),
    host TEXT,
    reason TEXT,
    job_id INTEGER,
    created_at REAL NOT NULL DEFAULT {_NOW_SQL},
    exit_code INTEGER
);
CREATE INDEX dispatches_by_created_at ON dispatches (created_at);

CREATE TABLE hook_events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    event TEXT NOT NULL,
    session_id TEXT,
    agent_id TEXT,
    tool_name TEXT,
    cwd TEXT,
    payload TEXT CHECK (payload IS NULL OR json_valid(payload)),
    received_at REAL NOT NULL DEFAULT {_NOW_SQL}
);
CREATE INDEX hook_events_by_session ON hook_events (session_id, received_at);
CREATE INDEX hook_events_by_received_at ON hook_events (received_at);
"""

_LEDGER_ID_SQL = (
    "INSERT OR IGNORE INTO swarmdeck_meta (key, value)"
    " VALUES ('ledger_id', lower(hex(randomblob(16))));"
)
"""Give the store its ledger id: a new file when it is set up, an older one by migration 11."""

MIGRATIONS: list[Migration] = [
    Migration(
        1, "jobs, peaks, alerts, findings, kill requests, dispatches, hook events", _SCHEMA_V1
    ),
    Migration(
        2,
        "jobs: when a job's booking was admitted (a queued row exists before it)",
        "ALTER TABLE jobs ADD COLUMN admitted_at REAL;",
    ),
    Migration(
        3,
        "watchdog: jobs name the Claude Code session and subagent that started them; findings "
        "get their subject's process and session, advice, when they fired; kill "
        "requests say who asked; the watchdog writer's lease",
        """
        ALTER TABLE jobs ADD COLUMN session_id TEXT;
        ALTER TABLE jobs ADD COLUMN agent_id TEXT;
        CREATE INDEX jobs_by_session ON jobs (session_id);
        ALTER TABLE findings ADD COLUMN host TEXT;
        ALTER TABLE findings ADD COLUMN session_id TEXT;
        ALTER TABLE findings ADD COLUMN job_id INTEGER;
        ALTER TABLE findings ADD COLUMN pid INTEGER;
        ALTER TABLE findings ADD COLUMN start_ticks INTEGER;
        ALTER TABLE findings ADD COLUMN advice TEXT;
        ALTER TABLE findings ADD COLUMN fired_at REAL;
        CREATE INDEX findings_by_session ON findings (session_id, resolved_at);
        ALTER TABLE kill_requests ADD COLUMN requested_by TEXT;
        CREATE TABLE watchdog_lease (
            name TEXT PRIMARY KEY,
            holder TEXT NOT NULL,
            expires_at REAL NOT NULL
        );
        """,
    ),
    Migration(
        4,
        "jobs: the run directory of a job run on a peer; dispatches: the memory each booked",
        "ALTER TABLE jobs ADD COLUMN run_dir TEXT;"
        " ALTER TABLE dispatches ADD COLUMN booked INTEGER;",
    ),
    Migration(
        5,
        "jobs: the Slurm job id of a job submitted to the cluster (NULL for a local run)",
        "ALTER TABLE jobs ADD COLUMN slurm_job_id INTEGER;"
        " CREATE INDEX jobs_by_slurm_job_id ON jobs (slurm_job_id);",
    ),
    Migration(
        6,
        "kill requests: the Slurm job id of a cluster job, which is stopped by scancel, never by"
        " a signal to a pid",
        "ALTER TABLE kill_requests ADD COLUMN slurm_job_id INTEGER;",
    ),
    Migration(
        7,
        "hook events: an index by event, so a refresh finds the few Notification and subagent"
        " events of the day without reading every tool call's row",
        "CREATE INDEX hook_events_by_event ON hook_events (event, received_at);",
    ),
    Migration(
        8,
        "alerts: who acknowledged an alert (acknowledged_at says when)",
        "ALTER TABLE alerts ADD COLUMN acknowledged_by TEXT;",
    ),
    Migration(
        9,
        "findings: who acknowledged a finding (acknowledged_at says when)",
        "ALTER TABLE findings ADD COLUMN acknowledged_by TEXT;",
    ),
    Migration(
        10,
        "jobs: the --cap as the person gave it ('8G', '70%'; '' when none was given), so a"
        " rerun repeats it; rows from before read NULL: their cap is the cage's, not what was"
        " declared",
        "ALTER TABLE jobs ADD COLUMN declared_cap TEXT;",
    ),
    Migration(
        11,
        "meta: the ledger's own id, random, so that an emptied or replaced state file is told"
        " from the ledger it was (ledger_mark.py)",
        _LEDGER_ID_SQL,
    ),
    Migration(
        12,
        "input runs: the fingerprint of a run's --inputs and the job that ran with them, so a"
        " rerun with nothing changed since a success is refused (actions/preflight.py)",
        "CREATE TABLE input_runs (fingerprint TEXT NOT NULL, job_id INTEGER NOT NULL,"
        " recorded_at REAL NOT NULL);"
        " CREATE INDEX input_runs_by_fingerprint ON input_runs (fingerprint, job_id);",
    ),
    Migration(
        13,
        "jobs: the run-scope declaration (SWARMDECK_SCOPE='kind=…; what=…; scope=…; why=…')"
        " the job was started with; NULL when none was",
        "ALTER TABLE jobs ADD COLUMN scope TEXT;",
    ),
]
"""Every schema step, in increasing version order. Append; never edit a released step."""


def latest_version() -> int:
    """The schema version this code writes: the highest in MIGRATIONS."""
    return max(m.version for m in MIGRATIONS)


def _check_migrations(migrations: list[Migration]) -> None:
    """A misordered list would skip steps silently on some databases; refuse it loudly."""
    versions = [m.version for m in migrations]
    if not versions or versions[0] < 1 or any(b <= a for a, b in pairwise(versions)):
        raise RuntimeError(f"state.MIGRATIONS must be strictly increasing from 1, got {versions}")


def _sql_statements(script: str) -> Iterator[str]:
    """Split a script into statements; `executescript` would commit the open transaction."""
    pending = ""
    for piece in script.split(";"):
        pending += piece + ";"
        if sqlite.complete_statement(pending):
            if pending.strip(" \t\r\n;"):
                yield pending
            pending = ""
    if pending.strip(" \t\r\n;"):
        raise ValueError(f"incomplete SQL statement in migration: {pending.strip()[:60]!r}")


def _doubling_pauses() -> Iterator[float]:
    """BEGIN_PAUSE_MIN, twice that, … up to BEGIN_PAUSE_MAX: a freed lock is taken within ms."""
    pause = BEGIN_PAUSE_MIN
    while True:
        yield pause
        pause = min(pause * 2, BEGIN_PAUSE_MAX)


def _jittered_pauses() -> Iterator[float]:
    """20 ms, 40 ms, … up to 0.5 s, each shortened by up to half at random, so processes
    opening one file at once do not retry in step."""
    import random  # here, not at the top: only a contended open needs it

    attempt = 0
    while True:
        attempt += 1
        yield min(0.5, 0.01 * 2**attempt) * random.uniform(0.5, 1.0)


def _error_code(error: sqlite.Error) -> int:
    return (getattr(error, "sqlite_errorcode", 0) or 0) & 0xFF


def _is_corruption(error: sqlite.Error) -> bool:
    return isinstance(error, sqlite.DatabaseError) and _error_code(error) in _CORRUPT_CODES


def _disk_full(path: str, error: sqlite.Error) -> StateError | None:
    """A StateError saying the disk is full, when that is why SQLite failed; else None.

    SQLite says "database or disk is full" mid-write, but only "disk I/O error" when it cannot
    even create its write-ahead log: the free space on the state folder's disk tells which.
    """
    code = _error_code(error)
    if code == _FULL_CODE or (code == _IOERR_CODE and _free_bytes(parent_of(path)) < _NEARLY_FULL):
        return StateError(
            f"state database {path}: its disk is full ({error}); nothing more was written and"
            " nothing recorded was lost: free space there or set SWARMDECK_STATE_DIR elsewhere"
        )
    return None


def _cannot_write(path: str, error: BaseException) -> StateError | None:
    """A StateError saying why a write to the state file failed, when the cause is the disk or
    the file system rather than the database: a full disk, a file, log or folder that cannot
    be written (an immutable flag, a read-only mount), an I/O error; else None.

    SQLite opens a file it may not write read-only and says so only at the first write; a file
    made immutable while SQLite has it open fails that write with an I/O error.
    """
    if not isinstance(error, sqlite.Error):
        return None
    code = _error_code(error)
    if code == _READONLY_CODE:
        return StateError(
            f"state database {path} cannot be written ({error}); nothing was written: "
            f"{MAKE_WRITABLE}"
        )
    if code == _IOERR_CODE:
        return _disk_full(path, error) or StateError(
            f"state database {path} could not be written ({error}); what was being written"
            f" was not: check the disk (dmesg), then {MAKE_WRITABLE}"
        )
    return _disk_full(path, error)


def _free_bytes(folder: str) -> int:
    try:
        st = os.statvfs(folder)
    except OSError:
        return 1 << 62  # cannot tell: not taken for a full disk
    return st.f_bavail * st.f_frsize


def _corrupt(path: str, detail: str) -> StateError:
    return StateError(
        f"state database {path} is corrupt ({detail}); swarmdeck left it untouched: "
        f"{_MOVE_ASIDE}, or try `sqlite3 {path} .recover`"
    )


def _refuse_emptied(path: str, mark: LedgerMark) -> None:
    """Refuse a missing or empty file where the mark says a ledger was."""
    try:
        size = os.stat(path).st_size
    except FileNotFoundError:
        raise _emptied(path, mark, "is missing") from None
    except OSError:
        return  # _inspect has read it: a file that cannot be read is refused there
    if size == 0:
        raise _emptied(path, mark, "is empty")


def _emptied(path: str, mark: LedgerMark, what: str) -> StateError:
    return StateError(
        f"state database {path} {what}, but ledger {mark.ledger_id} was kept there (says"
        f" {path}{LEDGER_SUFFIX}): it was truncated, removed or replaced, or lost its"
        " write-ahead log, and starting a new ledger would forget every job still running;"
        f" swarmdeck left it as it is: restore it from a backup, or remove"
        f" {path}{LEDGER_SUFFIX} to start a new, empty ledger"
    )


def _newer(path: str, stored: int) -> StateError:
    return StateError(
        f"state database {path} was made by a newer swarmdeck "
        f"(schema {stored} > {latest_version()}); upgrade swarmdeck"
    )


def _foreign(path: str, app_id: int, tables: list[str]) -> StateError:
    shown = ", ".join(tables[:5]) + (", …" if len(tables) > 5 else "")
    return StateError(
        f"{path} is another program's SQLite database (application_id {app_id:#x}, "
        f"tables: {shown or 'none'}); swarmdeck left it untouched: {_MOVE_ASIDE}"
    )


def _user_tables(conn: sqlite.Connection) -> list[str]:
    rows = conn.execute(
        "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
        "ORDER BY name"
    ).fetchall()
    return [row[0] for row in rows]


def _meta(conn: sqlite.Connection, key: str) -> str | None:
    row = conn.execute("SELECT value FROM swarmdeck_meta WHERE key = ?", (key,)).fetchone()
    return None if row is None else row[0]


def _stored_version(conn: sqlite.Connection, path: str) -> int:
    """The schema version in the file: 0 for a database swarmdeck has not set up yet.

    Refuses a file with tables that are not ours, so setup never writes into someone else's.
    """
    app_id = conn.execute("PRAGMA application_id").fetchone()[0]
    tables = _user_tables(conn)
    if app_id not in (0, APPLICATION_ID):
        raise _foreign(path, app_id, tables)
    if not tables:
        return 0
    if "swarmdeck_meta" not in tables or app_id != APPLICATION_ID:
        raise _foreign(path, app_id, tables)
    if _meta(conn, "application") != APPLICATION_NAME:
        raise _foreign(path, app_id, tables)
    version = _meta(conn, "schema_version")
    if version is None or not version.isdigit():
        raise _corrupt(path, f"schema_version is {version!r}")
    return int(version)


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


def _make_private(path: str) -> None:
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


def _quick_check(conn: sqlite.Connection) -> list[str]:
    return [row[0] for row in conn.execute("PRAGMA quick_check").fetchall()]


def _mark(path: str) -> LedgerMark | None:
    """The ledger mark beside the state file at `path` (ledger_mark.read_mark); StateError when
    something other than a regular file is there."""
    try:
        return read_mark(path)
    except NotRegularFile as error:
        raise StateError(
            f"ledger mark {error.path}: {error}; swarmdeck left it untouched: {_MOVE_ASIDE}"
        ) from None


def _inspect(path: str, verify: bool, lock_timeout: float) -> None:
    """Refuse, before SQLite opens it for writing, any file at `path` that is not ours and sound.

    Nothing is written here but the verification stamp: a missing or empty file is left for
    setup, anything else is read through a read-only connection that creates no sibling files.
    `verify` runs quick_check once per change of the file (see _verified_as_is): on a 16 MB
    file it costs 17 ms, which every `swarmdeck run` paid before.
    """
    from swarmdeck.regular_files import NotRegularFile, open_regular

    try:
        fd = open_regular(path)
    except FileNotFoundError:
        return
    except NotRegularFile as error:
        raise StateError(f"state database {path}: {error}; {_MOVE_ASIDE}") from None
    except OSError as error:
        raise StateError(
            f"state database {path} cannot be read ({error.strerror}); "
            f"swarmdeck left it untouched: check its permissions or {_MOVE_ASIDE}"
        ) from error
    try:
        status = os.fstat(fd)
        if status.st_size == 0:
            return
        header = os.pread(fd, 100, 0)
    except OSError as error:
        raise StateError(
            f"state database {path} cannot be read ({error.strerror}); "
            f"swarmdeck left it untouched: check its permissions or {_MOVE_ASIDE}"
        ) from error
    finally:
        os.close(fd)
    if not header.startswith(_SQLITE_MAGIC):
        raise StateError(
            f"{path} is not a SQLite database (it starts with {header[:16]!r}); "
            f"swarmdeck left it untouched: {_MOVE_ASIDE}"
        )
    if len(header) < 100:
        raise _corrupt(path, f"only {len(header)} bytes")
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
        f"swarmdeck left it untouched: {_MOVE_ASIDE}"
    )


def _refuse_a_log_lost_under_readers(path: str, status: os.stat_result) -> None:
    """Refuse a store whose -wal or -shm was deleted while other processes had it open.

    Opening it would make a fresh log and index beside what those processes still write to:
    the rows written since the last checkpoint, running jobs' among them, would be out of reach
    and their ids handed out again. A connection that is being made or closed holds the file's
    lock a moment without the two files, so the state is looked at again over a second.
    """
    lost = readers_without_log(path, status)
    for pause in _INDEX_PAUSES:
        if not lost:
            return
        time.sleep(pause)
        lost = readers_without_log(path, status)
    if not lost:
        return
    pids = ", ".join(map(str, lost[:5])) + (", …" if len(lost) > 5 else "")
    raise StateError(
        f"state database {path}: its write-ahead log (-wal, -shm) was deleted while process"
        f" {pids} still had it open, so what they wrote since the last checkpoint, running jobs"
        " among it, is out of reach; swarmdeck left it untouched: let those processes end"
        f" (fuser {path}) and check the ledger with `swarmdeck status`, or {_MOVE_ASIDE}"
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
        conn = sqlite.connect(uri, uri=True, timeout=lock_timeout, isolation_level=None)
    except sqlite.Error as error:
        raise _disk_full(path, error) or StateError(
            f"state database {path} cannot be opened ({error}); swarmdeck left it untouched: "
            f"{_MOVE_ASIDE}"
        ) from error
    try:
        stored = _stored_version(conn, path)
        if stored == 0 and wal_ignored:
            return False
        if stored > latest_version():
            raise _newer(path, stored)
        if verify and not _verified_as_is(path, status):
            problems = _quick_check(conn)
            if problems != ["ok"]:
                raise _corrupt(path, "; ".join(problems[:3]))
            _remember_verified(path, status)
        return True
    except sqlite.Error as error:
        if _is_corruption(error):
            raise _corrupt(path, str(error)) from error
        raise _disk_full(path, error) or StateError(
            f"state database {path} cannot be read ({error}); swarmdeck left it untouched: "
            f"{_MOVE_ASIDE}"
        ) from error
    finally:
        conn.close()


@dataclass
class _ThreadConnection:
    """This thread's connection, the process it was made in, and what is open on it."""

    conn: sqlite.Connection
    pid: int
    writing: bool = False
    savepoints: int = 0


class StateStore:
    """The state database at `path`: checked and brought to the latest schema when made.

    Args:
        path: the SQLite file; its folder is created when missing.
        verify: run `PRAGMA quick_check` when opening (about 1 ms per MB), once per change of
            the file; a caller that opens the store on every hook call may skip it, and
            corruption is then reported when a query meets it.
        lock_timeout: seconds a write waits for another process's write lock.
    """

    def __init__(
        self, path: PathLike[str] | str, verify: bool = True, lock_timeout: float = LOCK_TIMEOUT_S
    ) -> None:
        self.path = tidy(os.fspath(path))
        """The state file, spelled as pathlib spells it."""
        self.verify = verify
        self.lock_timeout = lock_timeout
        self._local = thread_local()
        paths.private_dir(parent_of(self.path))
        # The mark is read before the file is looked at: a mark is written only once its file
        # holds a ledger, so a file found empty after it was read is one that was emptied.
        mark = _mark(self.path)
        _inspect(self.path, self.verify, self.lock_timeout)
        if mark is not None:
            _refuse_emptied(self.path, mark)
        _make_private(self.path)
        self._migrate(mark)
        self.ledger_id = self._own_ledger(mark)
        """The ledger's own id (swarmdeck_meta), which no other state file holds."""

    def __repr__(self) -> str:
        return f"StateStore({self.path!r})"

    @classmethod
    def open_default(cls, verify: bool = True) -> StateStore:
        """The store at the configured state path (`SWARMDECK_STATE_DIR` aware)."""
        return cls(paths.state_db_path_text(), verify=verify)

    def connect(self) -> sqlite.Connection:
        """This thread's connection (autocommit: transactions are only the ones you open).

        A forked child gets a fresh connection: SQLite connections must not cross a fork.
        """
        current = getattr(self._local, "current", None)
        pid = os.getpid()
        if current is not None and current.pid == pid:
            return current.conn
        if current is not None:
            _INHERITED.append(current.conn)
        conn = self._open_connection()
        self._local.current = _ThreadConnection(conn, pid)
        return conn

    def close(self) -> None:
        """Close this thread's connection; the next `connect()` opens a new one."""
        current = getattr(self._local, "current", None)
        self._local.current = None
        if current is not None and current.pid == os.getpid():
            current.conn.close()

    def transaction(self) -> _Transaction:
        """A write transaction that holds the write lock from its first statement.

        Commits when the block ends, rolls back and re-raises on any exception. Waits up to
        `lock_timeout` for another writer. Inside another `transaction()` it is a savepoint:
        an exception undoes only the inner block.
        """
        return _Transaction(self)

    def read(self) -> _Read:
        """A consistent snapshot for reading; writing inside it raises.

        Writes belong in `transaction()`: a read snapshot upgraded to a write is what loses
        updates between processes. Inside an open transaction this is that transaction.
        """
        return _Read(self)

    def schema_version(self) -> int:
        """The schema version recorded in the file."""
        with self.read() as conn:
            return _stored_version(conn, self.path)

    def _current(self) -> _ThreadConnection:
        self.connect()
        current: _ThreadConnection = self._local.current
        return current

    def _open_connection(self) -> sqlite.Connection:
        try:
            conn = sqlite.connect(self.path, timeout=self.lock_timeout, isolation_level=None)
            conn.row_factory = sqlite.Row
            conn.execute(f"PRAGMA busy_timeout = {int(self.lock_timeout * 1000)}")
            mode = self._execute_when_unlocked(conn, "PRAGMA journal_mode = WAL").fetchone()[0]
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA foreign_keys = ON")
        except sqlite.Error as error:
            if _is_corruption(error):
                raise _corrupt(self.path, str(error)) from error
            raise _disk_full(self.path, error) or StateError(
                f"state database {self.path} cannot be opened ({error}); "
                f"check its folder's permissions or {_MOVE_ASIDE}"
            ) from error
        if mode != "wal":
            conn.close()
            raise StateError(
                f"state database {self.path} cannot use WAL mode (got {mode!r}); "
                "put the state folder on a local filesystem via SWARMDECK_STATE_DIR"
            )
        return conn

    def _locked_too_long(self) -> StateError:
        return StateError(
            f"state database {self.path} stayed locked by another process for "
            f"{self.lock_timeout:g} s; find the stuck swarmdeck process "
            f"(fuser {self.path}) and try again"
        )

    def _begin_immediate(self, conn: sqlite.Connection) -> None:
        """Take the write lock, waiting up to `lock_timeout` for another process to let go.

        SQLite's own busy handler sleeps 1, 2, 5 … 50, 100 ms between tries, so once a writer
        has waited a while the lock lies idle up to 100 ms after it is freed: with a hundred
        runners at once that idle time, not the work, sets the pace. So the write lock is asked
        for without SQLite's wait and asked again after pauses of 0.5 to 4 ms; the busy timeout
        stays in force for every other statement.
        """
        conn.execute("PRAGMA busy_timeout = 0")
        try:
            self._while_busy(lambda: conn.execute("BEGIN IMMEDIATE"), _doubling_pauses())
        finally:
            conn.execute(f"PRAGMA busy_timeout = {int(self.lock_timeout * 1000)}")

    def _execute_when_unlocked(self, conn: sqlite.Connection, sql: str) -> sqlite.Cursor:
        """Run `sql`, retried with backoff while another process holds the lock it needs.

        SQLite's busy timeout already waits inside most attempts; the retry covers the cases
        where SQLite answers "locked" without waiting: switching a new file to WAL while
        another process does the same, or WAL recovery by another connection.
        """
        return self._while_busy(lambda: conn.execute(sql), _jittered_pauses())

    def _while_busy(
        self, attempt: Callable[[], sqlite.Cursor], pauses: Iterator[float]
    ) -> sqlite.Cursor:
        """`attempt()` again after each of `pauses` while another process holds the lock, up
        to `lock_timeout`; damage and any other error are raised at once."""
        deadline = time.monotonic() + self.lock_timeout
        while True:
            try:
                return attempt()
            except sqlite.OperationalError as error:
                if _is_corruption(error):
                    raise _corrupt(self.path, str(error)) from error
                if _error_code(error) not in _BUSY_CODES:
                    unwritable = _cannot_write(self.path, error)
                    if unwritable is not None:
                        raise unwritable from error
                    raise
                if time.monotonic() >= deadline:
                    raise self._locked_too_long() from error
            time.sleep(max(0.0, min(next(pauses), deadline - time.monotonic())))

    def _migrate(self, mark: LedgerMark | None) -> None:
        """Apply every migration above the stored version, each in its own transaction.

        Several processes may open a fresh file at once; each step re-reads the version under
        the write lock, so a step runs exactly once. A file with no tables where the mark says
        a ledger was is refused before anything is written (see ledger_mark.py).
        """
        _check_migrations(MIGRATIONS)
        conn = self.connect()
        with self.read():
            stored = _stored_version(conn, self.path)
        if stored > latest_version():
            raise _newer(self.path, stored)
        if stored == 0 and mark is not None:
            self.close()
            raise _emptied(self.path, mark, "holds no ledger")
        pending = [m for m in MIGRATIONS if m.version > stored]
        if not pending:
            return
        conn.execute("PRAGMA foreign_keys = OFF")
        try:
            for migration in pending:
                self._apply(migration)
        finally:
            conn.execute("PRAGMA foreign_keys = ON")

    def _own_ledger(self, mark: LedgerMark | None) -> str:
        """The file's ledger id, checked against the mark beside it, which is (re)written when
        missing or when the same ledger now lies in another file (a restored copy)."""
        with self.read() as conn:
            ledger_id = _meta(conn, "ledger_id")
        if ledger_id is None:
            raise _corrupt(self.path, "swarmdeck_meta has no ledger_id")
        if mark is not None and mark.ledger_id != ledger_id:
            self.close()
            raise StateError(
                f"state database {self.path} holds another ledger ({ledger_id}) than the one"
                f" kept here ({mark.ledger_id}, in {self.path}{LEDGER_SUFFIX}): the file was"
                " replaced, and the jobs of the ledger that was here are not in it; swarmdeck"
                f" left it untouched: put that ledger's file back, or remove"
                f" {self.path}{LEDGER_SUFFIX} to go on with this one"
            )
        status = os.stat(self.path)
        if mark is None or (mark.device, mark.inode) != (status.st_dev, status.st_ino):
            write_mark(self.path, ledger_id, status)
        return ledger_id

    def _apply(self, migration: Migration) -> None:
        with self.transaction() as conn:
            stored = _stored_version(conn, self.path)
            if stored > latest_version():
                raise _newer(self.path, stored)
            if stored >= migration.version:
                return
            try:
                if stored == 0:
                    _set_up_meta(conn)
                if isinstance(migration.apply, str):
                    for statement in _sql_statements(migration.apply):
                        conn.execute(statement)
                else:
                    migration.apply(conn)
                broken = conn.execute("PRAGMA foreign_key_check").fetchall()
            except sqlite.Error as error:
                raise StateError(
                    f"state database {self.path}: migration {migration.version} "
                    f"({migration.description}) failed ({error}); it stays at schema {stored}"
                ) from error
            if broken:
                raise StateError(
                    f"state database {self.path}: migration {migration.version} "
                    f"({migration.description}) left {len(broken)} broken foreign keys "
                    f"(first in table {broken[0][0]}); it stays at schema {stored}"
                )
            conn.execute(
                "INSERT INTO swarmdeck_meta (key, value) VALUES ('schema_version', ?) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (str(migration.version),),
            )
            conn.execute(f"PRAGMA user_version = {int(migration.version)}")


class _Transaction:
    """What `StateStore.transaction()` gives: a context manager of its own, not contextlib's,
    whose import would cost every caged run half a millisecond."""

    def __init__(self, store: StateStore) -> None:
        self._store = store
        self._current: _ThreadConnection | None = None
        self._savepoint: _Savepoint | None = None

    def __enter__(self) -> sqlite.Connection:
        current = self._store._current()
        conn = current.conn
        if conn.in_transaction:
            if not current.writing:
                raise RuntimeError("transaction() inside read(): the snapshot cannot take a write")
            self._savepoint = _Savepoint(current)
            self._savepoint.__enter__()
            return conn
        self._store._begin_immediate(conn)
        current.writing = True
        self._current = current
        return conn

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: object
    ) -> bool:
        if self._savepoint is not None:
            return self._savepoint.__exit__(kind, error, traceback)
        current = self._current
        assert current is not None, "__exit__ without __enter__"
        conn, path = current.conn, self._store.path
        try:
            if error is not None:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                if isinstance(error, sqlite.Error) and _is_corruption(error):
                    raise _corrupt(path, str(error)) from error
                unwritable = _cannot_write(path, error)
                if unwritable is not None:
                    raise unwritable from error
                return False
            try:
                conn.execute("COMMIT")
            except BaseException as failure:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                unwritable = _cannot_write(path, failure)
                if unwritable is not None:
                    raise unwritable from failure
                raise
            return False
        finally:
            current.writing = False


class _Savepoint:
    """A `transaction()` inside another: an exception undoes only the inner block."""

    def __init__(self, current: _ThreadConnection) -> None:
        self._current = current
        self._name = ""

    def __enter__(self) -> None:
        current = self._current
        current.savepoints += 1
        self._name = f"swarmdeck_{current.savepoints}"
        try:
            current.conn.execute(f"SAVEPOINT {self._name}")
        except BaseException:
            current.savepoints -= 1
            raise

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: object
    ) -> bool:
        conn = self._current.conn
        try:
            if error is not None:
                conn.execute(f"ROLLBACK TO {self._name}")
            conn.execute(f"RELEASE {self._name}")
            return False
        finally:
            self._current.savepoints -= 1


class _Read:
    """What `StateStore.read()` gives: a snapshot that refuses writes (PRAGMA query_only)."""

    def __init__(self, store: StateStore) -> None:
        self._store = store
        self._conn: sqlite.Connection | None = None

    def __enter__(self) -> sqlite.Connection:
        conn = self._store._current().conn
        if conn.in_transaction:
            return conn
        conn.execute("BEGIN DEFERRED")
        conn.execute("PRAGMA query_only = ON")
        self._conn = conn
        return conn

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: object
    ) -> bool:
        conn = self._conn
        if conn is None:
            return False
        try:
            if isinstance(error, sqlite.Error) and _is_corruption(error):
                raise _corrupt(self._store.path, str(error)) from error
            return False
        finally:
            conn.execute("PRAGMA query_only = OFF")
            if conn.in_transaction:
                conn.execute("ROLLBACK")


def _set_up_meta(conn: sqlite.Connection) -> None:
    """Mark a new file as swarmdeck's, in the same transaction as its first tables."""
    conn.execute("CREATE TABLE swarmdeck_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    conn.executemany(
        "INSERT INTO swarmdeck_meta (key, value) VALUES (?, ?)",
        [("application", APPLICATION_NAME), ("created_at", repr(now()))],
    )
    conn.execute(_LEDGER_ID_SQL)
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
