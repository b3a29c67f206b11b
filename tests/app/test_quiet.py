"""A widget is touched only when what it shows changes, and the screen is laid out again only
when the new text changes the widget's size: a width that follows its text, or the lines it
takes at the width it has."""

from __future__ import annotations

import pytest
from textual.app import App, ComposeResult
from textual.widgets import Label, Static

from swarmdeck.app.quiet import show_text


class Figures(App[None]):
    CSS = """
    #one-line { text-wrap: nowrap; }
    #fixed { width: 24; text-wrap: nowrap; }
    """

    def compose(self) -> ComposeResult:
        yield Static("room 9.9G", id="one-line")
        yield Label("room 9.9G", id="fixed")
        yield Label("room 9.9G", id="sized")
        yield Static("room 9.9G", id="wrapping")


def layouts(monkeypatch: pytest.MonkeyPatch, widget: Static) -> list[bool]:
    """Each refresh the widget asks for: whether it lays the screen out again."""
    asked: list[bool] = []
    refresh = widget.refresh

    def recorded(*regions, **kwargs):
        asked.append(bool(kwargs.get("layout")))
        return refresh(*regions, **kwargs)

    monkeypatch.setattr(widget, "refresh", recorded)
    return asked


@pytest.mark.parametrize(
    ("widget_id", "laid_out"),
    [("one-line", False), ("fixed", False), ("sized", True), ("wrapping", False)],
)
async def test_a_longer_figure_lays_the_screen_out_only_when_the_size_follows(
    monkeypatch: pytest.MonkeyPatch, widget_id: str, laid_out: bool
) -> None:
    app = Figures()
    async with app.run_test(size=(80, 10)) as pilot:
        widget = app.query_one(f"#{widget_id}", Static)
        asked = layouts(monkeypatch, widget)
        show_text(widget, "room 9.9G")
        assert asked == []
        show_text(widget, "room 10.1G")
        await pilot.pause()
        assert asked and any(asked) is laid_out, asked
        assert str(widget.render()) == "room 10.1G"


async def test_a_text_wrapping_onto_another_line_lays_the_screen_out() -> None:
    app = Figures()
    async with app.run_test(size=(40, 10)) as pilot:
        widget = app.query_one("#wrapping", Static)
        show_text(widget, "room 10.1G · " * 5)
        await pilot.pause()
        assert widget.size.height == 2
        show_text(widget, "room 9.9G")
        await pilot.pause()
        assert widget.size.height == 1


async def test_a_line_more_in_a_text_that_never_wraps_lays_the_screen_out() -> None:
    app = Figures()
    async with app.run_test(size=(80, 10)) as pilot:
        widget = app.query_one("#one-line", Static)
        show_text(widget, "room 9.9G\nbooked 1G")
        await pilot.pause()
        assert widget.size.height == 2
