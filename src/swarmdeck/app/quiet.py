"""Changing a widget only when what it shows changes.

`Static.update` lays the screen out again even when the text is the same, and every refresh
brings the same figures for most of the screen: a control room left open for hours must cost
nothing for what did not change. Panels set text and border subtitles through these.
"""

from __future__ import annotations

from rich.cells import cell_len
from rich.text import Text
from textual.widget import Widget
from textual.widgets import Static


def show_text(widget: Static, content: str | Text) -> None:
    """Show `content` in `widget`, touching it only when it differs from what it shows; the
    screen is laid out again only when the widget's size changes with it: a widget as wide as
    its text whose text changed length, or one of `height: auto` whose text now takes another
    number of lines at its width (a figure in a legend that still fits its lines repaints
    those lines alone)."""
    old = widget.content
    if type(old) is type(content) and old == content:
        return
    if follows_text_width(widget):
        same_length = isinstance(old, str | Text) and cell_len(str(old)) == cell_len(str(content))
        widget.update(content, layout=not same_length)
        return
    if not follows_text_height(widget):
        widget.update(content, layout=False)
        return
    width = widget.content_region.width
    before = lines_taken(widget, width)
    widget.update(content, layout=False)
    if lines_taken(widget, width) != before:
        widget.refresh(layout=True)


def follows_text_width(widget: Widget) -> bool:
    """Whether the widget is as wide as its text (`width: auto`)."""
    return widget.styles.width is not None and widget.styles.width.is_auto


def follows_text_height(widget: Widget) -> bool:
    """Whether the widget is as high as its text's lines (`height: auto`)."""
    return widget.styles.height is None or widget.styles.height.is_auto


def lines_taken(widget: Widget, width: int) -> int:
    """How many lines the widget's content takes at `width` cells (Textual's own measure,
    which the layout uses)."""
    return widget.get_content_height(widget.size, widget.app.size, width)


def show_subtitle(widget: Widget, text: str) -> None:
    """Set the bottom-border text, touching the widget only when it changes."""
    if str(widget.border_subtitle or "") != text:
        widget.border_subtitle = text
