"""The `?` help lists every key the control room answers to and explains every column of every
panel, from the same bindings and column lists the panels use."""

from __future__ import annotations

from pilot_waits import probed
from rendered import plain
from textual.widgets import Static

from swarmdeck.app.help import HelpScreen
from swarmdeck.app.main import SwarmdeckApp
from swarmdeck.app.panel import TablePanel
from swarmdeck.app.watchdog import FINDING_COLUMNS, WatchdogPanel
from swarmdeck.config import load_config
from swarmdeck.state import StateStore
from swarmdeck.views.gpus import CARD_COLUMNS
from swarmdeck.views.records import KILL_COLUMNS


async def test_help_lists_every_binding_and_explains_every_panel_column() -> None:
    app = SwarmdeckApp(load_config(), StateStore.open_default())
    async with app.run_test(size=(120, 35)) as pilot:
        await probed(pilot)
        panels = list(app.query(".panel"))
        columns = {
            label
            for panel in panels if isinstance(panel, TablePanel)
            for _key, label in panel.COLUMNS
        }
        columns |= {label for _key, label in (*FINDING_COLUMNS, *KILL_COLUMNS, *CARD_COLUMNS)}
        bindings = [b for b in (*app.BINDINGS, *WatchdogPanel.BINDINGS)]
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        keys = plain(app.screen.query_one("#help-keys", Static).content)
        meaning = str(app.screen.query_one("#help-columns").render())
    for binding in bindings:
        assert f"{binding.key_display or binding.key}  {binding.description}" in keys, binding
    for key in ("enter", "esc", "tab / shift+tab", "ctrl+p"):
        assert key in keys, key
    assert "Focus GPUs" in keys and "Focus Gpus" not in keys
    for panel in ("Hosts", "Jobs", "Agents", "GPUs", "Locks", "Watchdog", "Alerts"):
        assert f"\n{panel}\n" in f"\n{meaning}\n", panel
    for label in sorted(columns):
        assert f"  {label}  " in meaning, label
    assert "⚑" in meaning
