"""Hook history is pruned by its own age, never by a wall clock that ran ahead: one call made
while the clock was eight days fast must not delete the week of calls before it.

The clock is moved through `record_event`'s own `now`, the time the call is recorded at."""

from __future__ import annotations

import sqlite3

from swarmdeck import paths
from swarmdeck.hooks.payload import HookInput
from swarmdeck.hooks.record import KEEP_DAYS, PRUNE_EVERY, close_left_open, record_event

DAY = 86400.0
START = 1_750_000_000.0


def _call(now: float) -> None:
    record_event(HookInput("Stop", {"session_id": "s", "hook_event_name": "Stop"}), now=now)


def _received() -> list[float]:
    close_left_open()
    conn = sqlite3.connect(paths.state_db_path())
    try:
        return [r[0] for r in conn.execute("SELECT received_at FROM hook_events ORDER BY id")]
    finally:
        conn.close()


def test_one_call_with_the_clock_days_ahead_keeps_the_hook_history() -> None:
    for n in range(PRUNE_EVERY - 1):
        _call(START + n)
    _call(START + (KEEP_DAYS + 1) * DAY)  # the call that prunes, with the clock 8 days fast
    assert len(_received()) == PRUNE_EVERY, "history pruned by a clock that ran ahead"


def test_history_older_than_its_days_is_still_pruned() -> None:
    for n in range(PRUNE_EVERY - 2):
        _call(START + n)
    later = START + (KEEP_DAYS + 1) * DAY
    _call(later - 60.0)  # the machine really went on: calls eight days on
    _call(later)
    assert _received() == [later - 60.0, later]
