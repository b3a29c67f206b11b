"""The control room under Textual's Pilot, probing this real host and a real state file."""

from __future__ import annotations

from pilot_waits import probed, until

from swarmdeck.app.help import HelpScreen
from swarmdeck.app.hosts import HostCard
from swarmdeck.app.keyed_table import KeyedTable
from swarmdeck.app.main import SwarmdeckApp
from swarmdeck.config import load_config
from swarmdeck.probes.host import local_host_name
from swarmdeck.state import StateStore


def make_app(**kwargs) -> SwarmdeckApp:
    return SwarmdeckApp(load_config(), StateStore.open_default(), **kwargs)


async def test_every_panel_is_on_screen_with_its_title() -> None:
    app = make_app()
    async with app.run_test(size=(160, 50)) as pilot:
        await probed(pilot)
        for panel_id, title in (("#hosts", "Hosts"), ("#jobs", "Jobs"), ("#agents", "Agents"),
                                ("#alerts", "Alerts")):
            panel = app.query_one(panel_id)
            assert panel.border_title == title
            assert panel.region.height > 0


async def test_hosts_panel_shows_this_host_once_probed() -> None:
    app = make_app()
    async with app.run_test(size=(160, 50)) as pilot:
        await probed(pilot)
        await until(pilot, lambda: app.query(HostCard) and app.query_one(HostCard).host, "host")
        card = app.query_one(HostCard)
        assert card.host is not None
        assert card.host.name == local_host_name()
        assert "slice cap" in str(card.query_one(".host-name").content)


async def test_question_mark_opens_help_and_escape_closes_it() -> None:
    app = make_app()
    async with app.run_test() as pilot:
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)


async def test_q_quits() -> None:
    app = make_app()
    async with app.run_test() as pilot:
        await pilot.press("q")
        await pilot.pause()
    assert app.return_code == 0
    assert not app.is_running


async def test_readonly_says_so_in_the_header() -> None:
    app = make_app(readonly=True)
    async with app.run_test():
        assert app.sub_title == "read-only"


async def test_an_open_alert_shows_in_the_alerts_panel_and_a_resolved_one_does_not() -> None:
    store = StateStore.open_default()
    with store.transaction() as conn:
        for key, resolved in (("disk", None), ("old", 1.0)):
            conn.execute(
                "INSERT INTO alerts (key, level, source, message, created_at, last_seen_at, count,"
                " resolved_at) VALUES (?, 'warning', 'test', ?, 1, 1, 3, ?)",
                (key, f"{key} alert", resolved),
            )
    app = SwarmdeckApp(load_config(), store)
    async with app.run_test(size=(160, 50)) as pilot:
        table = app.query_one("#alerts-table", KeyedTable)
        await probed(pilot)
        assert table.row_count == 1
        cells = [str(cell) for cell in table.get_row(table.row_keys[0])]
        assert "disk alert" in cells
        assert "3" in cells
