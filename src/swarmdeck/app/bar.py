"""A one-line bar of coloured segments: cores in use, or the memory book of a host."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget


@dataclass(frozen=True)
class BarSegment:
    """One coloured stretch of the bar."""

    value: float
    style: str
    name: str
    glyph: str = "█"
    """Free-looking parts (room) use a lighter glyph, so a full bar never reads as a full host."""


class StackedBar(Widget):
    """Segments laid end to end over a total; the rest of the width is drawn as free."""

    DEFAULT_CSS = """
    StackedBar {
        height: 1;
        width: 1fr;
    }
    """

    segments: reactive[tuple[BarSegment, ...]] = reactive(tuple)
    """What fills the bar, in order from the left."""
    total: reactive[float] = reactive(1.0)
    """What the full width stands for."""
    rest: reactive[str] = reactive("░")
    """The glyph of the width past the segments."""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        """Args:
            id: The widget id.
            classes: CSS classes.
        """
        super().__init__(id=id, classes=classes)

    def render(self) -> Text:
        width = max(1, self.size.width)
        text = Text()
        used = 0
        acc = 0.0
        for segment in self.segments:
            acc += max(0.0, segment.value)
            end = min(width, round(width * acc / self.total)) if self.total > 0 else 0
            if end > used:
                text.append(segment.glyph * (end - used), style=segment.style)
                used = end
        text.append(self.rest * (width - used), style="grey35")
        return text
