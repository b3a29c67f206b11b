"""The `n` form as a person uses it: its fit follows the memory book while it is open, and
Enter walks the fields to Launch without launching from a half-filled form."""

from __future__ import annotations

from pathlib import Path

from pilot_waits import launch_form, probed, until
from textual.widgets import Button, Input

from ledger_rows import add_job
from swarmdeck.app.launch import FIELDS, LaunchScreen
from swarmdeck.app.main import SwarmdeckApp
from swarmdeck.config import load_config
from swarmdeck.sizes import format_size
from swarmdeck.state import StateStore

MIB = 1 << 20


def fits_line(app: SwarmdeckApp) -> str:
    book = app.snapshot.book_of(app.snapshot.hosts[0].name) if app.snapshot else None
    assert book is not None
    return f"fits now: room {format_size(max(0, book.usable))}"


async def test_the_fit_follows_the_book_while_the_form_is_open(
    caged: Path, isolated_home: Path
) -> None:
    """A booking made after the form opened shows in its room at the next snapshot, with
    nothing retyped: the form says what launching does now, not when it was opened."""
    store = StateStore.open_default()
    app = SwarmdeckApp(load_config(), store, launch_cwd=isolated_home)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await launch_form(pilot)
        preview = screen.query_one("#launch-preview")
        screen.query_one("#launch-command", Input).value = "true"
        screen.query_one("#launch-cap", Input).value = "8M"
        before = fits_line(app)
        await until(pilot, lambda: before in str(preview.render()), "the room at opening")
        add_job(store, label="newcomer", booked=100 * MIB, cap=100 * MIB)
        await probed(pilot)
        after = fits_line(app)
        assert after != before
        await until(pilot, lambda: after in str(preview.render()), "the room after the booking")
        assert not screen.query_one("#do", Button).disabled


async def test_enter_walks_the_fields_then_reaches_launch(
    caged: Path, isolated_home: Path
) -> None:
    app = SwarmdeckApp(load_config(), StateStore.open_default(), launch_cwd=isolated_home)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await launch_form(pilot)
        launch = screen.query_one("#do", Button)
        assert app.focused is screen.query_one("#launch-command", Input)
        await pilot.press(*"true")
        for key, _, _ in FIELDS[1:]:
            await pilot.press("enter")
            assert app.focused is screen.query_one(f"#launch-{key}", Input)
            if key == "cap":
                await pilot.press(*"8M")
        await until(pilot, lambda: not launch.disabled, "a valid form")
        await pilot.press("enter")
        assert app.focused is launch
        assert isinstance(app.screen, LaunchScreen), "Enter in a field never launches"


async def test_enter_on_the_last_field_of_a_wrong_form_stays_there(
    caged: Path, isolated_home: Path
) -> None:
    app = SwarmdeckApp(load_config(), StateStore.open_default(), launch_cwd=isolated_home)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await launch_form(pilot)
        last = screen.query_one(f"#launch-{FIELDS[-1][0]}", Input)
        last.focus()
        await pilot.press("enter")
        assert app.focused is last
        assert screen.query_one("#do", Button).disabled
