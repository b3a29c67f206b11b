"""The modals fit the terminal: at 80×24 the approve modal, the migrate pane, the help and the
confirmations lie inside the screen with every word of what they say on screen (a long line
wraps under itself), and at 120×35 no line of the approve modal's tree or of the help wraps
back to the box's left edge losing what it wrapped."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixed_room import TREE, fix_trees, fixed_app
from pilot_waits import probed, until
from test_fit import drawn_lines
from textual.screen import ModalScreen
from textual.widgets import Button

from swarmdeck.app.help import NAVIGATION, HelpScreen
from swarmdeck.app.migrate import MigrateScreen
from swarmdeck.app.watchdog import WatchdogPanel
from swarmdeck.watchdog.kills import TreeMember


def screen_lines(app) -> list[str]:
    return [strip.text for strip in app.screen._compositor.render_strips()]


def squeezed(text: str) -> str:
    return "".join(text.split())


def modal_text(app) -> str:
    """Everything the modal draws, as one string without whitespace or box edges."""
    lines = screen_lines(app)
    box = next(iter(app.screen.children)).region
    inside = [line[box.x + 1:box.right - 1] for line in lines[box.y:box.bottom]]
    return squeezed("".join(inside))


async def _open(app, pilot, keys: list[str]) -> None:
    await probed(pilot)
    fix_trees(app)
    await pilot.press(*keys)
    await until(pilot, lambda: isinstance(app.screen, ModalScreen), "a modal")
    await pilot.pause()
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


def _inside_the_screen(app, width: int) -> None:
    for widget in app.screen.query("*"):
        if widget.display and widget.region.width:
            assert widget.region.right <= width, (widget, widget.region)


@pytest.mark.parametrize(
    ("keys", "watched"),
    [(["6", "y"], True), (["6", "down", "down", "k", "y"], True), (["2", "down", "m"], True),
     (["question_mark"], False), (["5", "l"], False), (["n"], False),
     (["2", "down", "down", "down", "down", "r"], False)],
    ids=["approve", "approve-after-k", "migrate", "help", "release", "launch", "rerun"],
)
async def test_every_modal_lies_inside_80_columns(
    isolated_home: Path, keys: list[str], watched: bool
) -> None:
    app = fixed_app(isolated_home, watched=watched)
    async with app.run_test(size=(80, 24)) as pilot:
        await _open(app, pilot, keys)
        _inside_the_screen(app, 80)
        for button in app.screen.query(Button):
            assert squeezed(str(button.label)) in modal_text(app), button.label


async def test_the_approve_modal_at_80_shows_the_whole_reason_and_button(
    isolated_home: Path,
) -> None:
    app = fixed_app(isolated_home, watched=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await _open(app, pilot, ["6", "y"])
        shown = modal_text(app)
        request = app.screen.request
        assert squeezed(request.reason) in shown and squeezed(request.command) in shown
        assert "Approve:stopthem" in shown


async def test_the_migrate_pane_at_80_shows_the_whole_command(isolated_home: Path) -> None:
    app = fixed_app(isolated_home, watched=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await _open(app, pilot, ["2", "down", "m"])
        pane = app.screen
        assert isinstance(pane, MigrateScreen)
        assert squeezed(pane.options[0].command) in modal_text(app)


LONG = TreeMember(
    4399, "python3",
    "python3 -c import time, sys; [time.sleep(float(a)) for a in sys.argv[1:]] idle 900.0 1",
)
"""A member whose command is longer than the modal's tree line at 120 columns."""


async def test_at_120_the_approve_tree_and_the_help_lose_nothing_to_wrapping(
    isolated_home: Path,
) -> None:
    app = fixed_app(isolated_home, watched=True)
    async with app.run_test(size=(120, 35)) as pilot:
        await probed(pilot)
        app.query_one(WatchdogPanel).tree_lister = lambda store, request: [*TREE, LONG]
        await pilot.press("6", "y")
        await until(pilot, lambda: isinstance(app.screen, ModalScreen), "the approve modal")
        await pilot.pause()
        shown = modal_text(app)
        for member in [*TREE, LONG]:
            assert squeezed(f"{member.pid}{member.comm}{member.command}") in shown, member
        lines = screen_lines(app)
        tree = drawn_lines(lines, app.screen.query_one("#approve-tree"))
        for line in tree[1:]:
            assert not line[:2].strip(), f"wrapped back to the box's edge: {line!r}"
        await pilot.press("escape")
        await pilot.press("question_mark")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen), "the help")
        await pilot.pause()
        shown = modal_text(app)
        for key, what in NAVIGATION:
            assert squeezed(f"{key}{what}") in shown, key
        keys = {key for key, _ in app.screen._keys}
        for line in drawn_lines(screen_lines(app), app.screen.query_one("#help-keys")):
            assert line[:15].strip() in keys | {""}, f"wrapped back to the box's edge: {line!r}"
