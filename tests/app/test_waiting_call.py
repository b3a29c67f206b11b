"""`k` on a finding about a tool call whose session waits for the person: the call is not
running, there is nothing to stop; the room says the session waits for the person and for
what, not that the finding "names no process to stop"."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from fixed_room import HOST, SESSION, fixed_app
from pilot_waits import probed, until

from swarmdeck.app.keyed_table import KeyedTable
from swarmdeck.state import StateStore


def _long_call_finding() -> int:
    store = StateStore.open_default()
    now = time.time()
    with store.transaction() as conn:
        cursor = conn.execute(
            "INSERT INTO findings (key, rule, subject, severity, message, first_seen_at,"
            " last_seen_at, count, host, session_id, advice, fired_at)"
            " VALUES (?, 'long_tool_call', ?, 'warning', 'one Bash call has run for 1m03s',"
            " ?, ?, 3, ?, ?, 'run long work as swarmdeck run --detach', ?)",
            (f"long_tool_call:{SESSION}:toolu_9", f"session {SESSION[:8]}: Bash git push",
             now - 120, now, HOST, SESSION, now - 60),
        )
        found = int(cursor.lastrowid)
    store.close()
    return found


@pytest.mark.parametrize("size", [(80, 24), (120, 35), (200, 60)])
async def test_k_on_a_call_waiting_for_the_person_says_so(
    isolated_home: Path, size: tuple[int, int]
) -> None:
    finding = _long_call_finding()
    app = fixed_app(isolated_home, watched=True)
    async with app.run_test(size=size) as pilot:
        await probed(pilot)
        await pilot.press("6")
        table = app.query_one("#findings-table", KeyedTable)
        await until(pilot, lambda: str(finding) in table.row_keys,
                    "the finding")
        table.focus()
        table.move_cursor(row=table.get_row_index(str(finding)))
        await pilot.press("k")
        await pilot.pause()
        said = [str(n.message) for n in app._notifications]
    assert any("waits for you" in line and "permission to run git push" in line
               for line in said), said
    assert not any("names no process to stop" in line for line in said), said
