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
    screen is laid out again only when its length changed and the widget's size follows its
    text (a figure in a one-line widget of set width repaints that line alone)."""
    old = widget.content
    if type(old) is type(content) and old == content:
        return
    same_length = isinstance(old, str | Text) and cell_len(str(old)) == cell_len(str(content))
    widget.update(content, layout=not same_length and sized_by_text(widget))


def sized_by_text(widget: Widget) -> bool:
    """Whether the widget's size can follow its text: `width: auto`, or text that wraps in a
    widget of `height: auto`."""
    styles = widget.styles
    if styles.width is not None and styles.width.is_auto:
        return True
    return styles.text_wrap != "nowrap" and (styles.height is None or styles.height.is_auto)


def show_subtitle(widget: Widget, text: str) -> None:
    """Set the bottom-border text, touching the widget only when it changes."""
    if str(widget.border_subtitle or "") != text:
        widget.border_subtitle = text
