"""The Alerts panel under Pilot: `a` on a row acknowledges that alert (when, and who), and it
leaves the panel; the help names the key for the Alerts panel."""

from __future__ import annotations

import getpass
import time
from functools import partial
from pathlib import Path

from pilot_waits import until
from rendered import plain
from textual.widgets import Static

from swarmdeck.actions.alerts import raise_alert
from swarmdeck.app.help import HelpScreen
from swarmdeck.app.keyed_table import KeyedTable
from swarmdeck.app.main import SwarmdeckApp
from swarmdeck.config import load_config
from swarmdeck.snapshot import take_snapshot
from swarmdeck.state import StateStore


def _room(home: Path, **options) -> tuple[SwarmdeckApp, StateStore]:
    (home / "config.toml").write_text("[ui]\nrefresh_interval = 0.2\n")
    config = load_config()
    store = StateStore.open_default()
    for key, message in (("slice-full", "the slice was full"), ("kill:3", "kill 3 approved")):
        with store.transaction() as conn:
            raise_alert(conn, key, "warning", "runner", "vm", message, time.time())
    return SwarmdeckApp(config, store, prober=partial(take_snapshot, config, store),
                        **options), store


async def test_a_on_an_alerts_row_acknowledges_it_and_it_leaves_the_panel(isolated_home):
    app, store = _room(isolated_home)
    async with app.run_test(size=(160, 60)) as pilot:
        table = app.query_one("#alerts-table", KeyedTable)
        await until(pilot, lambda: table.row_count == 2, "two alerts")
        await pilot.press("7")
        chosen = table.cursor_key()
        await pilot.press("a")
        await until(pilot, lambda: table.row_count == 1, "one alert left")
        assert chosen not in table.row_keys
    with store.read() as conn:
        row = conn.execute("SELECT acknowledged_at, acknowledged_by FROM alerts WHERE id = ?",
                           (int(chosen),)).fetchone()
    assert row["acknowledged_at"] is not None and row["acknowledged_by"] == getpass.getuser()


async def test_the_help_lists_the_acknowledge_key_of_the_alerts_panel(isolated_home):
    app, _ = _room(isolated_home)
    async with app.run_test(size=(160, 60)) as pilot:
        await pilot.press("question_mark")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen), "the help")
        keys = plain(app.screen.query_one("#help-keys", Static).content)
        assert "Acknowledge (in Alerts)" in keys


async def test_a_in_an_empty_alerts_panel_says_there_are_no_alerts(isolated_home: Path) -> None:
    (isolated_home / "config.toml").write_text("[ui]\nrefresh_interval = 0.2\n")
    config = load_config()
    store = StateStore.open_default()
    app = SwarmdeckApp(config, store, prober=partial(take_snapshot, config, store))
    async with app.run_test(size=(160, 60)) as pilot:
        await until(pilot, lambda: app.snapshot is not None, "the first snapshot")
        await pilot.press("7", "a")
        await until(pilot, lambda: app._notifications, "a notification")
        said = [str(n.message) for n in app._notifications]
    assert said == ["no open alerts: nothing to acknowledge"]
    store.close()


async def test_the_guards_line_counts_the_refusals_of_open_guard_alerts(isolated_home):
    app, store = _room(isolated_home)
    now = time.time()
    with store.transaction() as conn:
        for key in ("guard:timer:s1", "guard:timer:s1", "guard:heavy-outside-cage:s2"):
            raise_alert(conn, key, "warning", "guard", None, "guard refused", now)
    async with app.run_test(size=(160, 60)) as pilot:
        panel = app.query_one("#alerts")
        await until(pilot, lambda: "guards:" in str(panel.border_subtitle), "the guards line")
        assert str(panel.border_subtitle).startswith(
            "guards: 3 refusals by 2 guards (`swarmdeck guards`)"
        )
