"""One-line pictures of a figure: a bar of coloured segments (cores in use, the memory book of
a host) and a sparkline on a fixed scale (busy cores out of the host's cores), so a host that
is always full reads full and one always idle reads idle.

Each refresh brings new figures, most of them a hair from the last: a picture repaints only
when the line it draws changes, not whenever a figure does."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.text import Text
from textual.containers import Horizontal
from textual.geometry import Size
from textual.reactive import reactive
from textual.widget import Widget
from textual.widgets import Label

from swarmdeck.app.bar_legend import FREE, IN_USE


@dataclass(frozen=True)
class BarSegment:
    """One coloured stretch of the bar."""

    value: float
    style: str
    name: str
    glyph: str = IN_USE.glyph
    """Its glyph from the one legend (app/bar_legend.py): what is in use is █, room is ░, so a
    full bar never reads as a full host."""


class Picture(Widget):
    """A one-line picture of its reactives, which are declared with `repaint=False` and watched
    by `redraw`: the widget repaints only when the line it would draw differs from the last."""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        """Args:
            id: The widget id.
            classes: CSS classes.
        """
        super().__init__(id=id, classes=classes)
        self._drawn: Text | None = None
        self._built: tuple[Size, Text] | None = None
        """The line `redraw` built and asked to be drawn, with the size it was built for."""

    def picture(self) -> Text:
        """The line this widget draws now; each picture says what (the base draws nothing)."""
        return Text()

    def render(self) -> Text:
        built, self._built = self._built, None
        self._drawn = built[1] if built is not None and built[0] == self.size else self.picture()
        return self._drawn

    def redraw(self) -> None:
        """Repaint if the line differs from the one drawn last; that line is the one drawn."""
        line = self.picture()
        if line != self._drawn:
            self._built = (self.size, line)
            self.refresh()


class StackedBar(Picture):
    """Segments laid end to end over a total; the rest of the width is drawn as free."""

    DEFAULT_CSS = """
    StackedBar {
        height: 1;
        width: 1fr;
    }
    """

    segments: reactive[tuple[BarSegment, ...]] = reactive(tuple, repaint=False)
    """What fills the bar, in order from the left."""
    total: reactive[float] = reactive(1.0, repaint=False)
    """What the full width stands for."""
    rest: reactive[str] = reactive(FREE.glyph, repaint=False)
    """The glyph of the width past the segments (the legend's free, unless a bar says else)."""

    def watch_segments(self) -> None:
        self.redraw()

    def watch_total(self) -> None:
        self.redraw()

    def watch_rest(self) -> None:
        self.redraw()

    def picture(self) -> Text:
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


BARS = "▁▂▃▄▅▆▇"
"""A sparkline's heights, lowest first. Its full height is ▇, never █: █ is the bars' glyph of
memory in use (app/bar_legend.py), which a sparkline's history must never read as."""


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


def fixed_column_bars(
    data: Sequence[float], top: float, width: int, span: int, seen: int
) -> str:
    """`data`, the latest of `seen` readings, as columns that each hold a fixed run of readings
    counted from the first ever, so that the `span` readings a full history keeps fill the
    `width`: a column changes only while its run fills (the newest, at the right), and the line
    moves one column at a time, not at every reading."""
    if not data or width <= 0 or top <= 0:
        return ""
    per = max(1, -(-span // width))
    first = max(0, seen - len(data))
    columns: dict[int, float] = {}
    for index, value in enumerate(data, start=first):
        column = index // per
        columns[column] = max(value, columns.get(column, value))
    bars = []
    for column in sorted(columns)[-width:]:
        share = min(1.0, max(0.0, columns[column] / top))
        bars.append(BARS[round(share * (len(BARS) - 1))])
    return "".join(bars)


class ScaledSparkline(Picture):
    """A sparkline whose full height is a fixed `top`, not the largest point it holds."""

    DEFAULT_CSS = """
    ScaledSparkline {
        height: 1;
        width: 1fr;
        color: $success;
    }
    """

    data: reactive[tuple[float, ...]] = reactive(tuple, repaint=False)
    """The points, oldest first."""
    top: reactive[float] = reactive(1.0, repaint=False)
    """What a full bar stands for (the host's cores)."""
    bar_style: reactive[str] = reactive("", repaint=False)
    """A Rich style for the bars (a memory part's colour); empty: the widget's CSS colour."""
    span: reactive[int] = reactive(0, repaint=False)
    """How many readings a full history keeps; with `seen`, columns of fixed runs of readings
    (`fixed_column_bars`) instead of `data` divided among the columns as it is."""
    seen: reactive[int] = reactive(0, repaint=False)
    """How many readings there have been in all, `data` the latest of them; set before
    `data`, whose change repaints."""

    def watch_data(self) -> None:
        self.redraw()

    def watch_top(self) -> None:
        self.redraw()

    def watch_bar_style(self) -> None:
        self.redraw()

    def picture(self) -> Text:
        width = self.size.width
        bars = (
            fixed_column_bars(self.data, self.top, width, self.span, self.seen)
            if self.span and self.seen
            else scaled_bars(self.data, self.top, width)
        )
        return Text(bars, style=self.bar_style)


def bar_line(
    label: str | Text,
    drawn: Widget,
    figures: str | Text = "",
    *,
    label_id: str | None = None,
    figures_id: str | None = None,
    part: bool = False,
) -> Horizontal:
    """One line of a card or a detail view: its label, a bar or sparkline, the figures beside
    it; `part` for the narrower labels of a memory part's line."""
    kind = "part" if part else "bar"
    return Horizontal(
        Label(label, id=label_id, classes=f"{kind}-label"),
        drawn,
        Label(figures, id=figures_id, classes=f"{kind}-figures"),
        classes="bar-line",
    )

