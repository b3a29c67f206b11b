"""One-line pictures of a figure: a bar of coloured segments (cores in use, the memory book of
a host) and a sparkline on a fixed scale (busy cores out of the host's cores), so a host that
is always full reads full and one always idle reads idle."""

from __future__ import annotations

from collections.abc import Sequence
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


BARS = "▁▂▃▄▅▆▇█"


def scaled_bars(data: Sequence[float], top: float, width: int) -> str:
    """`data` as one bar per column on the scale 0..`top`, the newest at the right; more
    points than columns are grouped, each column showing the most of its group."""
    if not data or width <= 0 or top <= 0:
        return ""
    groups = max(1, min(width, len(data)))
    size = len(data) / groups
    bars = []
    for n in range(groups):
        group = data[int(n * size):max(int(n * size) + 1, int((n + 1) * size))]
        share = min(1.0, max(0.0, max(group) / top))
        bars.append(BARS[round(share * (len(BARS) - 1))])
    return "".join(bars)


class ScaledSparkline(Widget):
    """A sparkline whose full height is a fixed `top`, not the largest point it holds."""

    DEFAULT_CSS = """
    ScaledSparkline {
        height: 1;
        width: 1fr;
        color: $success;
    }
    """

    data: reactive[tuple[float, ...]] = reactive(tuple)
    """The points, oldest first."""
    top: reactive[float] = reactive(1.0)
    """What a full bar stands for (the host's cores)."""
    bar_style: reactive[str] = reactive("")
    """A Rich style for the bars (a memory part's colour); empty: the widget's CSS colour."""

    def render(self) -> Text:
        return Text(scaled_bars(self.data, self.top, self.size.width), style=self.bar_style)
