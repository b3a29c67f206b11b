"""The rows of hook_events: how a hook call is written, directly or through the spool.

Every hook call is kept as one row of hook_events (a trimmed copy of its input). A Bash call
that matches no heavy pattern is most of what hooks see, and loading SQLite alone costs such a
call a third of its budget; so a light PreToolUse call writes its input to a spool file of its
own (hook_spool.py, which imports neither json, typing nor sqlite3), and whoever next writes or
reads hook_events first folds the spool in, inside its own write transaction (`fold_into`):
the same rows `event_row` writes for any call, with the call's time, in the calls' order.
Readers go through `read_hook_events`, which folds first.
"""

from __future__ import annotations

import os
import stat
import time
from typing import TYPE_CHECKING

from swarmdeck import paths

# The light writer (hook_spool.py), which hooks/entry.py imports alone; its names are
# importable from here too.
from swarmdeck.hook_spool import (  # noqa: F401
    APPLICATION_ID,
    CALL_PREFIX,
    DISPATCH_TOOLS,
    FOLDING_PREFIX,
    MAX_PENDING,
    MAX_SPOOLED_INPUT,
    PART_PREFIX,
    SPOOL_NAME,
    SQLITE_MAGIC,
    append,
    field_text,
    record_line,
    safe_text,
    spool_path,
    store_is_set_up,
)

if TYPE_CHECKING:
    import sqlite3
    from contextlib import AbstractContextManager
    from typing import Any

    from swarmdeck.state import StateStore

REJECTED_NAME = "hook-spool.rejected"
"""Records the database refused even in their safe form, a line each, kept for a person."""
SPOOLED_EVENT = "PreToolUse"
"""The one event spooled: the light Bash call."""
ASKING_NOTIFICATIONS = ("agent_needs_input", "elicitation_dialog", "idle_prompt",
                        "permission_prompt", "worker_permission_prompt")
"""Notification types that wait for the person (a session waiting for them, as the Agents panel
shows it), and the ones `hooks install` asks Claude Code for; the others (auth_success,
agent_completed) only tell something."""
MAX_SPOOL = 8 * 1024 * 1024
"""The most of an older swarmdeck's spool file a fold reads, and of the rejected file kept."""
PART_AGE = 60.0
"""Seconds after which a part file is taken for abandoned (its writer died before the rename)
and removed; a writer still alive then finds its rename refused and records directly."""
LOCK_WAIT = 0.5
"""Seconds a fold waits for an older swarmdeck's writer holding `hook-spool` before it leaves
that file for later."""
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






def _safe_number(value: float) -> float | str:
    """A float as JSON can hold it: NaN and the infinities (what `NaN`, `Infinity` and a number
    like `1e999` read as) have no JSON form, and SQLite's json_valid refuses them: their names."""
    if value != value:
        return "NaN"
    if value in (_INFINITY, -_INFINITY):
        return "Infinity" if value > 0 else "-Infinity"
    return value


_INFINITY = float("inf")


def trimmed(data: dict[str, Any]) -> dict[str, Any]:
    """The input without tool output and with long texts cut, small enough for every call, and
    what the database cannot hold made safe: a number JSON has no form for becomes its name as
    text, half a surrogate pair becomes U+FFFD."""
    import json

    out: dict[str, Any] = {}
    for raw_key, value in data.items():
        key = safe_text(raw_key)
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
    text = json.dumps(out, ensure_ascii=False, allow_nan=False)
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
    """`value` cut to size, in a form JSON and UTF-8 can hold (safe_text, _safe_number)."""
    if isinstance(value, str):
        return safe_text(value if len(value) <= limit else value[:limit] + "…")
    if isinstance(value, float):
        return _safe_number(value)
    if depth > 4:
        return None
    if isinstance(value, dict):
        return {safe_text(k): _cut(v, limit, depth + 1) for k, v in list(value.items())[:50]}
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
        json.dumps(trimmed(data), ensure_ascii=False, allow_nan=False),
        now,
    )
















def _private_regular(st: os.stat_result) -> bool:
    return (
        stat.S_ISREG(st.st_mode)
        and st.st_uid == os.geteuid()
        and st.st_nlink == 1
        and not st.st_mode & 0o077
    )


def fold_into(conn: sqlite3.Connection, db_path: str) -> list[str]:
    """Insert the spooled calls into hook_events inside `conn`'s open write transaction.

    A call's file holds one record, `{"received_at": SECONDS, "input": THE INPUT}` between
    newlines (the input is JSON read whole, so its raw newlines are whitespace and become
    spaces). The writer takes no lock and waits for nothing: it writes a new `hook-spool.part.*`
    file and renames it to `hook-spool.call.*` (the time in ns, the pid, a count), so a fold
    sees a call's file whole or not at all; a write that fails, or a part file a fold removed as
    abandoned before the rename, sends the call to the database instead. The fold reads the
    call files (and the `hook-spool` and `hook-spool.folding.*` files an older swarmdeck left, a
    record a line) in a savepoint and inserts their rows. A row already present (same event,
    session, time and payload: a fold that committed and did not get to remove its files) is
    not inserted twice; a record the database still refuses is set aside, a line in
    `hook-spool.rejected`, and the others are folded.

    Returns the files to remove once the transaction has committed. What cannot be taken now
    (an older swarmdeck's writer holds its spool past LOCK_WAIT, a file that is not a private
    regular file, calls beyond MAX_PENDING) is left in place for a later fold: its calls are not
    lost, only later. A database error undoes the fold alone, in its savepoint, and leaves its
    files for a later fold; the caller's transaction goes on, unless the error ended it (then it
    is raised).
    """
    import sqlite3

    folder = os.path.dirname(db_path)
    folding, calls = _spooled(folder)
    taken = f"{FOLDING_PREFIX}{time.time_ns():020d}.{os.getpid()}"
    if _take(spool_path(db_path), os.path.join(folder, taken)):
        folding.append(taken)
    conn.execute("SAVEPOINT hook_spool_fold")
    try:
        folded = []
        for name in folding + calls:
            path = os.path.join(folder, name)
            records = _records(path)
            if records is None:
                continue
            for line, received_at, data in records:
                _insert_once(conn, folder, line, event_row(SPOOLED_EVENT, data, received_at))
            folded.append(path)
    except sqlite3.Error:
        if not conn.in_transaction:
            raise  # the error ended the caller's transaction too (a full disk): it says so
        # Safe to go on: the caller's own statements meet the same database and report what
        # is wrong with it, and the spooled calls wait in their files for the next fold.
        conn.execute("ROLLBACK TO hook_spool_fold")
        conn.execute("RELEASE hook_spool_fold")
        return []
    conn.execute("RELEASE hook_spool_fold")
    return folded


def _spooled(folder: str) -> tuple[list[str], list[str]]:
    """The files to fold in `folder`, oldest first: an older swarmdeck's folding files, and the
    call files (at most MAX_PENDING). Part files abandoned PART_AGE ago are removed."""
    try:
        names = os.listdir(folder)
    except OSError:
        return [], []  # no folder to list: there is no spool in it either
    folding = sorted(name for name in names if name.startswith(FOLDING_PREFIX))
    calls = sorted(name for name in names if name.startswith(CALL_PREFIX))[:MAX_PENDING]
    abandoned = time.time() - PART_AGE
    for name in names:
        if name.startswith(PART_PREFIX):
            path = os.path.join(folder, name)
            try:
                st = os.stat(path, follow_symlinks=False)
                if _private_regular(st) and st.st_mtime < abandoned:
                    os.unlink(path)
            except OSError:
                continue  # renamed or removed meanwhile: not abandoned, or not there
    return folding, calls


def _insert_once(
    conn: sqlite3.Connection, folder: str, line: bytes, row: tuple[Any, ...]
) -> None:
    """Insert a spooled call's row unless it is there; one the database refuses is set aside."""
    import sqlite3

    try:
        conn.execute(_INSERT_ONCE, row)
    except (sqlite3.IntegrityError, ValueError):
        # This record alone: a constraint refused its row, or its text could not be bound. The
        # statement is undone, the transaction goes on; left in the spool it would fail every
        # fold after this one.
        _set_aside(os.path.join(folder, REJECTED_NAME), line)


def _set_aside(rejected: str, line: bytes) -> None:
    """Append a refused record to the rejected file, while it is under MAX_SPOOL."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(rejected, flags, paths.PRIVATE_FILE_MODE)
    except OSError:
        return  # a link or worse in its place: the record, never storable, is dropped
    try:
        own = os.fstat(fd)
        if _private_regular(own) and own.st_size < MAX_SPOOL:
            os.write(fd, line + b"\n")
    except OSError:
        return  # a full disk: the record, never storable, is dropped
    finally:
        os.close(fd)


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


def _records(path: str) -> list[tuple[bytes, float, dict]] | None:
    """The complete records of a spool file, in order (each as its line, its time and its
    input); None when it cannot be read."""
    import json

    from swarmdeck.regular_files import read_regular

    try:
        if not _private_regular(os.stat(path, follow_symlinks=False)):
            return None
        data = read_regular(path, MAX_SPOOL + 2 * MAX_SPOOLED_INPUT)
    except OSError:
        return None
    records = []
    for line in data.split(b"\n"):
        if not line:
            continue
        try:
            record = json.loads(line)
        except ValueError:
            continue  # cut short by a failed write; that call recorded itself (fold_into)
        if not isinstance(record, dict):
            continue
        received_at, data_in = record.get("received_at"), record.get("input")
        if (
            isinstance(received_at, float)
            and received_at - received_at == 0.0  # finite: no NaN, no infinity
            and isinstance(data_in, dict)
        ):
            records.append((line, received_at, data_in))
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
    start and the folded files removed once it committed (the files only after the commit,
    which a generator-based context manager would make harder to see)."""

    def __init__(self, store: StateStore) -> None:
        self._store = store
        self._transaction = store.transaction()
        self._folded: list[str] = []

    def __enter__(self) -> sqlite3.Connection:
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
        return any(
            name.startswith((CALL_PREFIX, FOLDING_PREFIX))
            for name in os.listdir(os.path.dirname(db_path))
        )
    except OSError:
        return False


def fold(store: StateStore) -> None:
    """Fold the spool into `store` now, in a transaction of its own."""
    if has_spooled(str(store.path)):
        with folded_transaction(store):
            pass


def read_hook_events(store: StateStore) -> AbstractContextManager[sqlite3.Connection]:
    """`store.read()` with every spooled call in hook_events: the one way to read these rows.

    A light call still in the spool is the latest event of its session (it answers a wait, it
    says the session is busy), so a reader that skipped the fold would see the past. Inside a
    transaction or a read already open nothing is folded: that snapshot is the caller's.
    """
    if not store.connect().in_transaction:
        fold(store)
    return store.read()
