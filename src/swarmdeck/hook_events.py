"""The rows of hook_events: how a hook call is written, directly or through the spool.

Every hook call is kept as one row of the state database's hook_events (a trimmed copy of its
input: tool outputs and long texts cut). A Bash call that matches no heavy pattern is most of
what hooks see, and loading SQLite alone costs such a call a third of its budget; so a light
PreToolUse call appends its input, as read, to `hook-spool` in the state folder with one
`os.write`, and whoever next writes or reads hook_events (the next hook call that records
through the database, the runner looking for the subagent that started a job, the watchdog)
first folds the spool in: the rows are the ones `event_row` writes for any call, with the
time of the call, in the order the calls came.

Each record is one line, `{"received_at": SECONDS, "input": THE INPUT}`, with a newline before
and after it: the input is JSON that json read whole, so its raw newlines are whitespace and
become spaces; a record cut short by a failed write is cut off the spool again by its writer
(the call then records itself through the database), and any part of one still left there is
a line of its own that the fold skips.

A writer holds an exclusive `lockf` lock on the spool while it checks that the path still names
the file it opened and appends; a fold, inside its database write transaction, takes the same
lock only to rename the spool to a name of its own (`hook-spool.folding.*`), reads it, inserts
its rows, and removes the file once the transaction has committed. A fold also takes up every
such file it finds (one left by a fold that failed before its commit, or that committed and
has not yet removed it): a row already present (same event, session, time and payload) is not
inserted twice, so nothing is lost and nothing doubled.

This module sits beside state.py, below the hooks, the actions and the watchdog that all read
or write these rows; the spool writer, on the light path, imports neither json nor sqlite3.
"""

from __future__ import annotations

import os
import stat
import time

from swarmdeck import paths

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from swarmdeck import sqlite
    from swarmdeck.state import StateStore

APPLICATION_ID = int.from_bytes(b"SWDK", "big")
"""state.APPLICATION_ID: calls are spooled only beside a file that says it is swarmdeck's."""
SQLITE_MAGIC = b"SQLite format 3\x00"
SPOOL_NAME = "hook-spool"
FOLDING_PREFIX = "hook-spool.folding."
"""A spool taken by a fold: `FOLDING_PREFIX` + the time it was taken (ns) + `.` + the pid."""
SPOOLED_EVENT = "PreToolUse"
"""The one event spooled: the light Bash call."""
ASKING_NOTIFICATIONS = ("agent_needs_input", "elicitation_dialog", "idle_prompt",
                        "permission_prompt")
"""Notification types that wait for the person (a session waiting for them, as the Agents panel
shows it), and the ones `hooks install` asks Claude Code for; the others (auth_success,
agent_completed) only tell something."""
MAX_SPOOLED_INPUT = 64 * 1024
"""A larger input is recorded through the database, trimmed there."""
MAX_SPOOL = 8 * 1024 * 1024
"""A spool this large takes no more records until it is folded: calls record directly."""
WRITE_TRIES = 3
"""Opens of the spool a writer tries while folds keep renaming it away."""
LOCK_WAIT = 0.5
"""Seconds a fold waits for a writer's lock on the spool before it leaves the spool for later."""
_WRITE_FLAGS = (
    os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
)
INSERT = (
    "INSERT INTO hook_events (event, session_id, agent_id, tool_name, cwd, payload, received_at)"
    " VALUES (?, ?, ?, ?, ?, ?, ?)"
)
_INSERT_ONCE = (
    "INSERT INTO hook_events (event, session_id, agent_id, tool_name, cwd, payload, received_at)"
    " SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7 WHERE NOT EXISTS (SELECT 1 FROM hook_events"
    " WHERE session_id IS ?2 AND received_at = ?7 AND event = ?1 AND payload IS ?6)"
)
MAX_TEXT = 2000
MAX_PAYLOAD = 16 * 1024
_RESPONSE_KEYS = (
    "status",
    "agentId",
    "isAsync",
    "totalTokens",
    "totalToolUseCount",
    "totalDurationMs",
    "interrupted",
    "backgroundTaskId",
    "resumedAgentId",
)
_TASK_KEYS = ("id", "type", "status", "agent_type", "description")
"""What is kept of each of a Stop's `background_tasks`: the list is kept whole or not at all,
since a task left out of it reads as ended (probes/hook_activity.py)."""


def field_text(data: dict[str, Any], key: str) -> str | None:
    """A field of a hook's input as text: None when missing, empty or not a string."""
    value = data.get(key)
    return value if isinstance(value, str) and value else None


def trimmed(data: dict[str, Any]) -> dict[str, Any]:
    """The input without tool output and with long texts cut, small enough for every call."""
    import json

    out: dict[str, Any] = {}
    for key, value in data.items():
        if key == "tool_response":
            if isinstance(value, dict):
                out[key] = {k: _cut(value[k]) for k in _RESPONSE_KEYS if k in value}
            continue
        if key == "background_tasks" and isinstance(value, list):
            out[key] = [
                {k: _cut(task[k], 200) for k in _TASK_KEYS if k in task}
                for task in value
                if isinstance(task, dict)
            ]
            continue
        out[key] = _cut(value)
    text = json.dumps(out, ensure_ascii=False)
    if len(text) > MAX_PAYLOAD:
        small = {k: v for k, v in out.items() if not isinstance(v, dict | list)}
        tool_input = out.get("tool_input")
        if isinstance(tool_input, dict):
            small["tool_input"] = {
                k: _cut(tool_input[k], 500)
                for k in ("command", "description", "subagent_type", "run_in_background")
                if k in tool_input
            }
        out = small
    return out


def _cut(value: Any, limit: int = MAX_TEXT, depth: int = 0) -> Any:
    if isinstance(value, str):
        return value if len(value) <= limit else value[:limit] + "…"
    if depth > 4:
        return None
    if isinstance(value, dict):
        return {k: _cut(v, limit, depth + 1) for k, v in list(value.items())[:50]}
    if isinstance(value, list):
        return [_cut(v, limit, depth + 1) for v in value[:50]]
    return value


def event_row(event: str, data: dict[str, Any], now: float) -> tuple[Any, ...]:
    """The hook_events row of one call (INSERT's order of columns)."""
    import json

    return (
        event,
        field_text(data, "session_id"),
        field_text(data, "agent_id"),
        field_text(data, "tool_name"),
        field_text(data, "cwd"),
        json.dumps(trimmed(data), ensure_ascii=False),
        now,
    )


def spool_path(db_path: str) -> str:
    """The spool beside the state database `db_path`."""
    return os.path.join(os.path.dirname(db_path), SPOOL_NAME)


def record_line(raw: bytes, received_at: float) -> bytes:
    """One call's record, with its newlines (see module doc); `raw` is JSON json read whole."""
    return b'\n{"received_at": %s, "input": %s}\n' % (
        repr(received_at).encode(),
        raw.replace(b"\n", b" "),
    )


def append(raw: bytes, received_at: float) -> bool:
    """Append a light PreToolUse call; False when it must be recorded through the database.

    That is when the input is not a plain UTF-8 object, the store is not one a plain insert
    would write to (not set up yet, not swarmdeck's, not a database: the database path sets it
    up or says what is wrong), the state folder is not private, the spool is not this user's
    regular file or is full, or the write fails.
    """
    if len(raw) > MAX_SPOOLED_INPUT or not _plain_object(raw):
        return False
    db = paths.state_db_path_text()
    if not store_is_set_up(db) or paths.state_dir_refusal(os.path.dirname(db)) is not None:
        return False
    record = record_line(raw, received_at)
    spool = spool_path(db)
    for _ in range(WRITE_TRIES):
        written = _append_once(spool, record)
        if written is not None:
            return written
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


def _append_once(spool: str, record: bytes) -> bool | None:
    """Whether the record was appended; None when the spool was renamed away meanwhile."""
    try:
        fd = os.open(spool, _WRITE_FLAGS, paths.PRIVATE_FILE_MODE)
    except OSError:
        return False  # a link, a FIFO without reader, a folder: the database path says more
    try:
        own = os.fstat(fd)
        if not _private_regular(own) or own.st_size >= MAX_SPOOL:
            return False
        os.lockf(fd, os.F_LOCK, 0)
        try:
            now = os.stat(spool, follow_symlinks=False)
        except FileNotFoundError:
            return None
        if (now.st_dev, now.st_ino) != (own.st_dev, own.st_ino):
            return None
        if now.st_size >= MAX_SPOOL:
            # Others appended while this writer waited for the lock: the size seen before it
            # no longer bounds the spool, and a fold reads no more than MAX_SPOOL and a record.
            return False
        try:
            if os.write(fd, record) == len(record):
                return True
        except OSError:
            pass
        # Cut short (a full disk, a size limit): what got out is taken back while the lock is
        # held, for all but the newline of a record is a whole line the fold would insert
        # beside the row the call now writes itself.
        os.ftruncate(fd, now.st_size)
        return False
    except OSError:
        return False
    finally:
        os.close(fd)  # releases the lock


def _private_regular(st: os.stat_result) -> bool:
    return (
        stat.S_ISREG(st.st_mode)
        and st.st_uid == os.geteuid()
        and st.st_nlink == 1
        and not st.st_mode & 0o077
    )


def fold_into(conn: sqlite.Connection, db_path: str) -> list[str]:
    """Insert the spooled calls into hook_events inside `conn`'s open write transaction.

    Returns the files to remove once the transaction has committed. A spool that cannot be
    taken now (a writer holds it past LOCK_WAIT, it is not a private regular file) is left in
    place for a later fold: its calls are not lost, only later.
    """
    folder = os.path.dirname(db_path)
    try:
        names = sorted(name for name in os.listdir(folder) if name.startswith(FOLDING_PREFIX))
    except OSError:
        names = []  # no folder to list: there is no spool in it either
    taken = f"{FOLDING_PREFIX}{time.time_ns():020d}.{os.getpid()}"
    if _take(spool_path(db_path), os.path.join(folder, taken)):
        names.append(taken)
    folded = []
    for name in names:
        path = os.path.join(folder, name)
        records = _records(path)
        if records is None:
            continue
        for received_at, data in records:
            conn.execute(_INSERT_ONCE, event_row(SPOOLED_EVENT, data, received_at))
        folded.append(path)
    return folded


def _take(spool: str, folding: str) -> bool:
    """Rename the spool to `folding` under the writers' lock; False when there is none."""
    try:
        fd = os.open(spool, os.O_WRONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False  # no spool: nothing was appended since the last fold
    try:
        if not _private_regular(os.fstat(fd)):
            return False
        deadline = time.monotonic() + LOCK_WAIT
        while True:
            try:
                os.lockf(fd, os.F_TLOCK, 0)
                break
            except (BlockingIOError, PermissionError):
                if time.monotonic() > deadline:
                    return False
                time.sleep(0.002)
        os.rename(spool, folding)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def _records(folding: str) -> list[tuple[float, dict]] | None:
    """The complete records of the folding file, in order; None when it cannot be read."""
    import json

    from swarmdeck.regular_files import read_regular

    try:
        if not _private_regular(os.stat(folding, follow_symlinks=False)):
            return None
        data = read_regular(folding, MAX_SPOOL + 2 * MAX_SPOOLED_INPUT)
    except OSError:
        return None
    records = []
    for line in data.split(b"\n"):
        if not line:
            continue
        try:
            record = json.loads(line)
        except ValueError:
            continue  # cut short by a failed write; that call recorded itself (module doc)
        if not isinstance(record, dict):
            continue
        received_at, data_in = record.get("received_at"), record.get("input")
        if isinstance(received_at, float) and isinstance(data_in, dict):
            records.append((received_at, data_in))
    return records


def remove_folded(folded: list[str]) -> None:
    """Remove the folded files once their rows are committed."""
    for path in folded:
        try:
            os.unlink(path)
        except FileNotFoundError:
            continue  # a later fold found it left over and removed it first


def folded_transaction(store: StateStore) -> _FoldedTransaction:
    """`store.transaction()`, with the spooled calls in hook_events from its first statement.

    Inside another transaction nothing is folded: the file could only be removed at the outer
    commit, which this block does not see.
    """
    return _FoldedTransaction(store)


class _FoldedTransaction:
    """What `folded_transaction` gives: the store's transaction, the spool folded in at its
    start and the folded files removed once it committed. A context manager of its own, not
    contextlib's: every caged run ends in one, and that import would cost it."""

    def __init__(self, store: StateStore) -> None:
        self._store = store
        self._transaction = store.transaction()
        self._folded: list[str] = []

    def __enter__(self) -> sqlite.Connection:
        nested = self._store.connect().in_transaction
        conn = self._transaction.__enter__()
        if not nested:
            try:
                self._folded = fold_into(conn, str(self._store.path))
            except BaseException as error:
                # As an exception inside the block would: the transaction rolls back.
                self._transaction.__exit__(type(error), error, error.__traceback__)
                raise
        return conn

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: object
    ) -> bool:
        self._transaction.__exit__(kind, error, traceback)
        if error is None:
            remove_folded(self._folded)
        return False


def has_spooled(db_path: str) -> bool:
    """Whether anything waits to be folded beside `db_path` (a few system calls)."""
    if os.path.lexists(spool_path(db_path)):
        return True
    try:
        return any(name.startswith(FOLDING_PREFIX) for name in os.listdir(os.path.dirname(db_path)))
    except OSError:
        return False


def fold(store: StateStore) -> None:
    """Fold the spool into `store` now, in a transaction of its own; for readers."""
    if has_spooled(str(store.path)):
        with folded_transaction(store):
            pass
