"""The `?` help lists every key the control room answers to and explains every column of every
panel, from the same bindings and column lists the panels use."""

from __future__ import annotations

import pytest
from pilot_waits import probed
from rendered import plain
from textual.widgets import Static

from swarmdeck.app import bar_legend
from swarmdeck.app.agent_tree import FOLDED, STATUS_MARKS
from swarmdeck.app.help import GLOSSARY, READ_ONLY_MARK, HelpScreen
from swarmdeck.app.main import SwarmdeckApp
from swarmdeck.app.panel import TablePanel
from swarmdeck.app.watchdog import FINDING_COLUMNS, WatchdogPanel
from swarmdeck.config import load_config
from swarmdeck.state import StateStore
from swarmdeck.views.gpus import CARD_COLUMNS
from swarmdeck.views.jobs import CEILING_MARK, PANEL_COLUMNS
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
        meaning = plain(app.screen.query_one("#help-columns", Static).content)
    for binding in bindings:
        assert f"{binding.key_display or binding.key}  {binding.description}" in keys, binding
    for key in ("enter", "esc", "tab / shift+tab", "ctrl+p"):
        assert key in keys, key
    assert "Focus GPUs" in keys and "Focus Gpus" not in keys
    for panel in ("Bars", "Hosts", "Jobs", "Agents", "GPUs", "Locks", "Watchdog", "Alerts"):
        assert f"\n{panel}\n" in f"\n{meaning}\n", panel
    for label in sorted(columns):
        assert f"  {label}  " in meaning, label
    assert "⚑" in meaning
    bars = f"\n{meaning}".split("\nBars\n", 1)[1].split("\nHosts\n", 1)[0]
    one_line = " ".join(bars.split())
    for mark in bar_legend.MARKS:
        assert f"{mark.glyph} {' '.join(mark.meaning.split())}" in one_line, mark
    for glyph in (*STATUS_MARKS.values(), FOLDED):
        assert glyph in meaning, glyph


@pytest.mark.parametrize("size", [(80, 24), (120, 35)], ids=["80x24", "120x35"])
async def test_a_glossary_meaning_wraps_under_itself_not_to_the_margin(
    size: tuple[int, int],
) -> None:
    app = SwarmdeckApp(load_config(), StateStore.open_default())
    async with app.run_test(size=size) as pilot:
        await probed(pilot)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        await pilot.pause()
        columns = app.screen.query_one("#help-columns", Static)
        drawn = plain(columns.content, width=columns.content_region.width).splitlines()
    terms = {f"  {term}  " for _panel, entries in GLOSSARY for term, _ in entries}
    panels = {panel for panel, _ in GLOSSARY}
    meaning_at = None
    wrapped = 0
    for line in drawn:
        if line.rstrip() in panels:
            meaning_at = None
        elif term := next((t for t in terms if line.startswith(t)), None):
            meaning_at = len(line) - len(line[len(term):].lstrip())
        else:
            assert meaning_at is not None, f"a line outside any term: {line!r}"
            assert not line[:meaning_at].strip(), f"wrapped back to the margin: {line!r}"
            wrapped += 1
    assert wrapped, "no meaning wrapped: the test saw nothing"


async def test_read_only_the_help_marks_every_key_that_would_change_something() -> None:
    """Under --readonly the footer leaves out what would change anything; the help still lists
    those keys, each marked off, so that a person reading it does not press them in vain."""
    from swarmdeck.app.commands import ACTIONS

    app = SwarmdeckApp(load_config(), StateStore.open_default(), readonly=True)
    async with app.run_test(size=(120, 35)) as pilot:
        await probed(pilot)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        keys = plain(app.screen.query_one("#help-keys", Static).content)
    lines = [" ".join(line.split()) for line in keys.splitlines()]
    changing = [b for b in WatchdogPanel.BINDINGS if b.description]
    for binding in [*(a for a in app.BINDINGS if a.action in {x.action for x in ACTIONS}),
                    *changing]:
        line = next(line for line in lines if line.startswith(
            f"{binding.key_display or binding.key} {' '.join(binding.description.split())}"))
        assert line.endswith(READ_ONLY_MARK), line
    for line in lines:
        if line.startswith(("? ", "q ", "1 ", "enter ")):
            assert not line.endswith(READ_ONLY_MARK), line


def _hosts_section() -> str:
    hosts = dict(GLOSSARY)["Hosts"]
    return "\n".join(f"{name}: {meaning}" for name, meaning in hosts)


def test_the_help_explains_every_figure_of_a_host_and_its_whole() -> None:
    """`threads free 0/2 (8 over)`, `room 208M/768M slice`, `slice cap`, `available`,
    the load: each is explained, and says which whole it is a part of (the slice, the host,
    the heavy-thread budget)."""
    section = _hosts_section()
    names = [name for name, _ in dict(GLOSSARY)["Hosts"]]
    for figure in ("threads free A/B (N over)", "room A/B slice", "slice cap",
                   "available", "load", "N of M cores busy", "memory room", "GPU free"):
        assert figure in names, (figure, names)
    meaning = dict(dict(GLOSSARY)["Hosts"])
    assert "budget" in meaning["threads free A/B (N over)"]
    assert "over" in meaning["threads free A/B (N over)"].split("budget", 1)[1]
    # The budget as config.heavy_thread_budget sets it, and what a run without --threads takes.
    assert "cores less one" in meaning["threads free A/B (N over)"]
    assert "without --threads" in meaning["threads free A/B (N over)"]
    assert "slice" in meaning["room A/B slice"] and "MemTotal" in section
    assert "whole host" in meaning["available"]
    assert "reserve" in meaning["slice cap"]


@pytest.mark.parametrize("size", [(80, 24), (120, 35), (200, 60)])
async def test_the_memory_figure_names_the_slice_its_room_is_of(
    isolated_home, size: tuple[int, int]
) -> None:
    from fixed_room import fixed_app

    app = fixed_app(isolated_home)
    async with app.run_test(size=size) as pilot:
        await probed(pilot)
        await pilot.press("1")
        await pilot.pause()
        figures = " ".join(str(w.render()) for w in app.query(".memory-figures"))
    assert "room 250G/480G slice" in figures, figures


def test_the_jobs_columns_are_explained_in_the_order_the_panel_draws_them() -> None:
    """A person reading the help beside the Jobs panel finds its columns in the same order:
    the memory figures first (booked, peak, cap), then runtime, then the rest; and the peak's
    mark for a job that reached its cap is the one the panel draws."""
    jobs = dict(GLOSSARY)["Jobs"]
    assert [label for label, _meaning in jobs] == [label for _key, label in PANEL_COLUMNS]
    assert CEILING_MARK in dict(jobs)["peak"]
