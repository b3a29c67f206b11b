"""The store: one connection per thread and process, and the transactions every writer takes.

The app, the runners, the hooks and the watchdog read and write the file at once, so it runs in
WAL mode and every write is an explicit transaction. `StateStore.transaction()` takes the write
lock up front (`BEGIN IMMEDIATE`): a read-check-write such as admission then sees no other
writer between its read and its write.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from swarmdeck import paths
from swarmdeck.errors import StateError
from swarmdeck.ledger_mark import LEDGER_SUFFIX, LedgerMark, write_mark
from swarmdeck.state.refusals import (
    BUSY_CODES,
    MOVE_ASIDE,
    cannot_write,
    corrupt,
    disk_full,
    emptied,
    error_code,
    is_corruption,
)
from swarmdeck.state.schema import (
    Migration,
    latest_version,
    meta,
    newer,
    pending_migrations,
    set_up_meta,
    sql_statements,
    stored_version,
)
from swarmdeck.state.verify import inspect, ledger_mark_of, make_private, refuse_emptied

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from os import PathLike

LOCK_TIMEOUT_S = 30.0
"""How long a write waits for another process's write lock before giving up."""
BEGIN_PAUSE_MIN = 0.0005
BEGIN_PAUSE_MAX = 0.004
"""The shortest and longest pause between two tries for the write lock (see begin_immediate)."""


# Connections made by a parent process before a fork. Closing one in the child could disturb
# the parent's locks and WAL, so the child keeps a reference and never touches it again.
_INHERITED: list[sqlite3.Connection] = []


def now() -> float:
    """Epoch seconds as REAL: the one unit for every time column in the store."""
    return time.time()


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


@dataclass
class ThreadConnection:
    """This thread's connection, the process it was made in, and what is open on it."""

    conn: sqlite3.Connection
    pid: int
    writing: bool = False
    savepoints: int = 0


class StateStore:
    """The state database at `path`: checked and brought to the latest schema when made.

    Args:
        path: the SQLite file; its folder is created when missing.
        verify: run `PRAGMA quick_check` when opening (its cost grows with the file), once per
            change of the file; a caller that opens the store on every hook call may skip it, and
            corruption is then reported when a query meets it.
        lock_timeout: seconds a write waits for another process's write lock.
    """

    def __init__(
        self, path: PathLike[str] | str, verify: bool = True, lock_timeout: float = LOCK_TIMEOUT_S
    ) -> None:
        self.path = str(PurePosixPath(os.fspath(path)))
        """The state file, spelled as pathlib spells it."""
        self.verify = verify
        self.lock_timeout = lock_timeout
        self._local = threading.local()
        paths.private_dir(os.path.dirname(self.path) or ".")
        # The mark is read before the file is looked at: a mark is written only once its file
        # holds a ledger, so a file found empty after it was read is one that was emptied.
        mark = ledger_mark_of(self.path)
        inspect(self.path, self.verify, self.lock_timeout)
        if mark is not None:
            refuse_emptied(self.path, mark)
        make_private(self.path)
        self._migrate(mark)
        self.ledger_id = self._own_ledger(mark)
        """The ledger's own id (swarmdeck_meta), which no other state file holds."""

    def __repr__(self) -> str:
        return f"StateStore({self.path!r})"

    @classmethod
    def open_default(cls, verify: bool = True) -> StateStore:
        """The store at the configured state path (`SWARMDECK_STATE_DIR` aware)."""
        return cls(Path(paths.state_db_path()), verify=verify)

    def connect(self) -> sqlite3.Connection:
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
        self._local.current = ThreadConnection(conn, pid)
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
            return stored_version(conn, self.path)

    def thread_connection(self) -> ThreadConnection:
        """This thread's connection with what is open on it (made when missing), for the
        transaction and read blocks that track it."""
        self.connect()
        current: ThreadConnection = self._local.current
        return current

    def _open_connection(self) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(self.path, timeout=self.lock_timeout, isolation_level=None)
            conn.row_factory = sqlite3.Row
            conn.execute(f"PRAGMA busy_timeout = {int(self.lock_timeout * 1000)}")
            mode = self._execute_when_unlocked(conn, "PRAGMA journal_mode = WAL").fetchone()[0]
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA foreign_keys = ON")
        except sqlite3.Error as error:
            if is_corruption(error):
                raise corrupt(self.path, str(error)) from error
            raise disk_full(self.path, error) or StateError(
                f"state database {self.path} cannot be opened ({error}); "
                f"check its folder's permissions or {MOVE_ASIDE}"
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

    def begin_immediate(self, conn: sqlite3.Connection) -> None:
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

    def _execute_when_unlocked(self, conn: sqlite3.Connection, sql: str) -> sqlite3.Cursor:
        """Run `sql`, retried with backoff while another process holds the lock it needs.

        SQLite's busy timeout already waits inside most attempts; the retry covers the cases
        where SQLite answers "locked" without waiting: switching a new file to WAL while
        another process does the same, or WAL recovery by another connection.
        """
        return self._while_busy(lambda: conn.execute(sql), _jittered_pauses())

    def _while_busy(
        self, attempt: Callable[[], sqlite3.Cursor], pauses: Iterator[float]
    ) -> sqlite3.Cursor:
        """`attempt()` again after each of `pauses` while another process holds the lock, up
        to `lock_timeout`; damage and any other error are raised at once."""
        deadline = time.monotonic() + self.lock_timeout
        while True:
            try:
                return attempt()
            except sqlite3.OperationalError as error:
                if is_corruption(error):
                    raise corrupt(self.path, str(error)) from error
                if error_code(error) not in BUSY_CODES:
                    unwritable = cannot_write(self.path, error)
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
        conn = self.connect()
        with self.read():
            stored = stored_version(conn, self.path)
        if stored > latest_version():
            raise newer(self.path, stored)
        if stored == 0 and mark is not None:
            self.close()
            raise emptied(self.path, mark, "holds no ledger")
        pending = pending_migrations(stored)
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
            ledger_id = meta(conn, "ledger_id")
        if ledger_id is None:
            raise corrupt(self.path, "swarmdeck_meta has no ledger_id")
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
            stored = stored_version(conn, self.path)
            if stored > latest_version():
                raise newer(self.path, stored)
            if stored >= migration.version:
                return
            try:
                if stored == 0:
                    set_up_meta(conn)
                if isinstance(migration.apply, str):
                    for statement in sql_statements(migration.apply):
                        conn.execute(statement)
                else:
                    migration.apply(conn)
                broken = conn.execute("PRAGMA foreign_key_check").fetchall()
            except sqlite3.Error as error:
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
    """What `StateStore.transaction()` gives: BEGIN IMMEDIATE, or a savepoint inside another."""

    def __init__(self, store: StateStore) -> None:
        self._store = store
        self._current: ThreadConnection | None = None
        self._savepoint: _Savepoint | None = None

    def __enter__(self) -> sqlite3.Connection:
        current = self._store.thread_connection()
        conn = current.conn
        if conn.in_transaction:
            if not current.writing:
                raise RuntimeError("transaction() inside read(): the snapshot cannot take a write")
            self._savepoint = _Savepoint(current)
            self._savepoint.__enter__()
            return conn
        self._store.begin_immediate(conn)
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
                if isinstance(error, sqlite3.Error) and is_corruption(error):
                    raise corrupt(path, str(error)) from error
                unwritable = cannot_write(path, error)
                if unwritable is not None:
                    raise unwritable from error
                return False
            try:
                conn.execute("COMMIT")
            except BaseException as failure:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                unwritable = cannot_write(path, failure)
                if unwritable is not None:
                    raise unwritable from failure
                raise
            return False
        finally:
            current.writing = False


class _Savepoint:
    """A `transaction()` inside another: an exception undoes only the inner block."""

    def __init__(self, current: ThreadConnection) -> None:
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
        self._conn: sqlite3.Connection | None = None

    def __enter__(self) -> sqlite3.Connection:
        conn = self._store.thread_connection().conn
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
            if isinstance(error, sqlite3.Error) and is_corruption(error):
                raise corrupt(self._store.path, str(error)) from error
            return False
        finally:
            conn.execute("PRAGMA query_only = OFF")
            if conn.in_transaction:
                conn.execute("ROLLBACK")


