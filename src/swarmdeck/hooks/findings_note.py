"""PostToolUse and PostToolUseFailure: tell the agent about watchdog findings on its session
that are new to it.

"New" means fired since this session's previous tool call ended (either event), so each
finding is said once, right after the tool call during which it appeared. One indexed query
through a plain sqlite3 connection: this runs after every tool call an agent makes.
"""

from __future__ import annotations

import os
import sqlite3
from typing import TYPE_CHECKING

from swarmdeck import paths
from swarmdeck.hooks.contract import added_context
from swarmdeck.hooks.payload import HookInput

if TYPE_CHECKING:
    from typing import Any

SHOWN = 3
_NEW_FINDINGS = (
    "SELECT rule, subject, advice, message FROM findings"
    " WHERE session_id = ? AND resolved_at IS NULL AND fired_at IS NOT NULL"
    " AND fired_at > coalesce((SELECT max(received_at) FROM hook_events"
    "  WHERE session_id = ? AND event IN ('PostToolUse', 'PostToolUseFailure')), 0)"
    " ORDER BY fired_at LIMIT ?"
)


def findings_answer(hook: HookInput) -> dict[str, Any] | None:
    if not hook.session_id:
        return None
    db = paths.state_db_path()
    if not os.path.exists(db):
        return None
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1.0)
    try:
        rows = conn.execute(_NEW_FINDINGS, (hook.session_id, hook.session_id, SHOWN)).fetchall()
    except sqlite3.OperationalError:
        return None  # a store older than the watchdog's columns: nothing to say
    finally:
        conn.close()
    if not rows:
        return None
    lines = [f"- {rule}: {subject} — {advice or message}"
             for rule, subject, advice, message in rows]
    text = "swarmdeck watchdog, new about this session:\n" + "\n".join(lines)
    return added_context(hook.event, text)
