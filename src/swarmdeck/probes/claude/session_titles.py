"""The last title each Claude Code session showed while it ran, kept in swarmdeck's state.

Claude Code 2.1.328 names a session only in its pid file (`sessions/<pid>.json`, `name`) and
writes no title record into the transcript; the pid file goes when the process exits, and the
title with it. The readers a person watches (the control room, `status`, `watch`) keep the
title of each live session here, so an ended session still shows it, to any later reader.
Nothing is ever written under Claude Code's folder.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import sqlite3

    from swarmdeck.state import StateStore

KEEP_FOR = 60 * 24 * 3600.0
"""Seconds a title is kept after it was last seen: twice Claude Code's default
`cleanupPeriodDays` (30), after which the transcript it names is gone too."""
MAX_TITLE = 200
"""The longest title kept, as a transcript's title records are cut."""


def keep_titles(store: StateStore, live: Mapping[str, str]) -> None:
    """Keep the title of each live session (session id → its title now) that differs from the
    one kept for it.

    A snapshot with nothing new writes nothing: the titles are read first, and the write
    lock is taken only for a session that got a title or changed it.
    """
    seen = {sid: title[:MAX_TITLE] for sid, title in live.items() if title}
    if not seen:
        return
    with store.read() as conn:
        known = _titles(conn, seen)
    changed = [(sid, title) for sid, title in seen.items() if known.get(sid) != title]
    if not changed:
        return
    now = time.time()
    with store.transaction() as conn:
        conn.executemany(
            "INSERT INTO session_titles (session_id, title, seen_at) VALUES (?, ?, ?)"
            " ON CONFLICT (session_id) DO UPDATE SET title = excluded.title,"
            " seen_at = excluded.seen_at",
            [(sid, title, now) for sid, title in changed],
        )
        conn.execute("DELETE FROM session_titles WHERE seen_at < ?", (now - KEEP_FOR,))


def kept_titles(store: StateStore, session_ids: Iterable[str]) -> dict[str, str]:
    """The title kept for each of these sessions that has one, by session id."""
    wanted = list(dict.fromkeys(session_ids))
    if not wanted:
        return {}
    with store.read() as conn:
        return _titles(conn, wanted)


def _titles(conn: sqlite3.Connection, session_ids: Iterable[str]) -> dict[str, str]:
    ids = list(session_ids)
    out: dict[str, str] = {}
    # SQLite takes at most 999 parameters a statement in older builds.
    for start in range(0, len(ids), 500):
        part = ids[start:start + 500]
        marks = ", ".join("?" * len(part))
        rows = conn.execute(
            f"SELECT session_id, title FROM session_titles WHERE session_id IN ({marks})", part
        )
        out.update((row[0], row[1]) for row in rows)
    return out
