"""Appends a hook call to the state database's hook_events, so the app sees live state at once.

The usual case, a store that already exists, is one short insert through a plain sqlite3
connection: opening a `StateStore` (schema checks, migrations) would cost several times a
hook's budget. Only a missing store goes through `StateStore`, which creates and migrates it.
What is stored is a trimmed copy of the input (hook_events.py); the light calls spooled since
the last write are folded in first.
"""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path
from stat import S_ISREG
from typing import TYPE_CHECKING

from swarmdeck import hook_events, paths
from swarmdeck.hook_events import (
    APPLICATION_ID,
    INSERT,
    fold_into,
    folded_transaction,
    remove_folded,
)
from swarmdeck.hooks.payload import HookInput

if TYPE_CHECKING:
    from typing import Any

LOCK_WAIT = 1.0
KEEP_DAYS = 7
PRUNE_EVERY = 500
_LEFT_OPEN: list[sqlite3.Connection] = []
"""Connections of recorded calls, never closed by this process (see _fast_insert)."""


def event_row(hook: HookInput, now: float) -> tuple[Any, ...]:
    """The hook_events row of this call (see hook_events.py, the one home of its shape)."""
    return hook_events.event_row(hook.event, hook.data, now)


def record_event(hook: HookInput, now: float | None = None) -> None:
    """Append the call to hook_events; raises sqlite3.Error or StateError when it cannot."""
    row = event_row(hook, time.time() if now is None else now)
    if not _fast_insert(row):
        _store_insert(row)


def _fast_insert(row: tuple[Any, ...]) -> bool:
    """Insert through a plain connection, after the spooled calls (hook_events.py) so that row
    ids follow the calls' order; False when the store must be set up first."""
    db = paths.state_db_path()
    try:
        st = os.stat(db)
    except OSError:
        return False
    if st.st_size == 0 or not S_ISREG(st.st_mode) or paths.state_dir_refusal(os.path.dirname(db)):
        return False  # the store says what is wrong, or sets itself up
    conn = sqlite3.connect(db, timeout=LOCK_WAIT, isolation_level=None)
    try:
        if conn.execute("PRAGMA application_id").fetchone()[0] != APPLICATION_ID:
            conn.close()
            return False
        if conn.execute("PRAGMA user_version").fetchone()[0] < 1:
            conn.close()
            return False
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("BEGIN IMMEDIATE")
        try:
            before = conn.total_changes
            folded = fold_into(conn, db)
            rowid = conn.execute(INSERT, row).lastrowid
            first = rowid - (conn.total_changes - before) if rowid is not None else None
            if first is not None and rowid // PRUNE_EVERY > first // PRUNE_EVERY:
                _prune(conn, first, row[-1])
            conn.execute("COMMIT")
        except BaseException:
            # A failed COMMIT (a full disk) has already rolled back: a second ROLLBACK would
            # replace the cause with "no transaction is active".
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
    except BaseException:
        conn.close()
        raise
    remove_folded(folded)
    # Left open for the process's end (a hook ends with os._exit): closing the last connection
    # would checkpoint the WAL into the state file, which costs the hook a write and, changing
    # the file, makes the next `swarmdeck run` verify all of it again.
    _LEFT_OPEN.append(conn)
    return True


def _prune(conn: sqlite3.Connection, last_before: int, now: float) -> None:
    """Delete the hook history older than KEEP_DAYS, its age counted from the newest row
    recorded before this transaction (id up to `last_before`) when `now` lies after it.

    One call made while the wall clock runs days ahead would otherwise delete every row
    before it; a machine that really went on gets its old rows pruned at the next turn.
    """
    newest = conn.execute(
        "SELECT received_at FROM hook_events WHERE id <= ? ORDER BY received_at DESC LIMIT 1",
        (last_before,),
    ).fetchone()
    since = now if newest is None else min(now, newest[0])
    conn.execute("DELETE FROM hook_events WHERE received_at < ?", (since - KEEP_DAYS * 86400,))


def close_left_open() -> None:
    """Close the connections recorded calls left open: for callers whose process goes on."""
    while _LEFT_OPEN:
        _LEFT_OPEN.pop().close()


def _store_insert(row: tuple[Any, ...]) -> None:
    """The first call on a machine: let the store create and migrate its file, then insert."""
    from swarmdeck.state import StateStore

    store = StateStore(Path(paths.state_db_path()), verify=False, lock_timeout=LOCK_WAIT * 5)
    try:
        with folded_transaction(store) as conn:
            conn.execute(INSERT, row)
    finally:
        store.close()
