"""The footer of keys, narrowed by whole keys: on a narrow terminal the keys that do not fit are
left out whole (`?` lists them all), never cut mid-label at the palette key's edge."""

from __future__ import annotations

from collections.abc import Sequence

from textual.widget import Widget
from textual.widgets import Footer

KEPT_KEY = "question_mark"
"""The key shown whatever else gives way: the help, which lists every other."""
KEY_WIDGETS = "FooterKey"
"""The footer's key widgets, queried by type name: Textual exports no class for them."""


def shown_keys(widths: Sequence[int], space: int, kept: int | None) -> list[bool]:
    """Which keys, of these widths in footer order, are shown in `space` cells: the kept one
    first, then the others in order up to the first that does not fit."""
    left = space - (widths[kept] if kept is not None else 0)
    shown = [index == kept and left >= 0 for index in range(len(widths))]
    for index, width in enumerate(widths):
        if index == kept:
            continue
        if width > left:
            break
        shown[index] = True
        left -= width
    return shown


class FittedFooter(Footer):
    """Textual's footer, showing only the keys whose labels fit whole."""

    async def recompose(self) -> None:
        await super().recompose()
        self.fit()

    def on_resize(self) -> None:
        self.fit()

    def fit(self) -> None:
        """Show the keys that fit beside the palette key, each whole."""
        keys = [key for key in self.query_children(KEY_WIDGETS)
                if not key.has_class("-command-palette")]
        palette = sum(self._width(key) for key in self.query_children(".-command-palette"))
        widths = [self._width(key) for key in keys]
        kept = next(
            (n for n, key in enumerate(keys) if getattr(key, "key", None) == KEPT_KEY), None
        )
        for key, shown in zip(keys, shown_keys(widths, self.size.width - palette, kept),
                              strict=True):
            key.display = shown

    def _width(self, key: Widget) -> int:
        """The cells a key takes in the footer: its label, padding, border and margin."""
        styles = key.styles
        return (key.get_content_width(self.size, self.size) + styles.gutter.width
                + styles.margin.width)
