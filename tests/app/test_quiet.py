"""A widget is touched only when what it shows changes, and the screen is laid out again only
when the new text can change the widget's size."""

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
    [("one-line", False), ("fixed", False), ("sized", True), ("wrapping", True)],
)
async def test_a_longer_figure_lays_the_screen_out_only_when_the_size_can_follow(
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
