"""The Hosts panel: cores, the memory book and a busy-cores sparkline for each host.

`up`/`down` choose a card (marked while the panel has the focus) and `enter` asks for its
detail view (app/host_detail.py) with a `HostsPanel.Opened` message.

On a short screen, out of focus, the panel shows its glance (`glance`, app/collapse.py): each card
is its first line alone, saying the host's headroom first (views/hosts.py headroom_parts).

A card's figures move when they move by what a person reads (HELD_LOAD, HELD_MEMORY), not by
every hair of jitter between two refreshes: an idle host's card then redraws nothing.
"""

from __future__ import annotations

import dataclasses
from collections import deque

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.reactive import var
from textual.widget import Widget
from textual.widgets import Label, Static

from swarmdeck.app.bar import BarSegment, ScaledSparkline, StackedBar
from swarmdeck.app.bar_legend import FREE, HOST_MEMORY, IN_USE, NOT_BOOKABLE, OUTSIDE
from swarmdeck.app.panel import SnapshotPanel
from swarmdeck.app.quiet import show_text
from swarmdeck.app.whole_parts import WholeParts
from swarmdeck.printable import printable
from swarmdeck.probes.host import HostSnapshot
from swarmdeck.probes.memory_book import MemoryBook
from swarmdeck.probes.peer_cache import PeerReading
from swarmdeck.sizes import MIB, SHORT_SIZE_WIDTH, format_size
from swarmdeck.snapshot import Snapshot
from swarmdeck.views.hosts import (
    DASH,
    HOST_SEPARATOR,
    HostFigures,
    figures_of,
    gpu_free_text,
    headroom_parts,
    host_parts,
)
from swarmdeck.views.slurm import cluster_text

REST = NOT_BOOKABLE.glyph
"""What fills the memory bar past its parts: memory the book does not offer to jobs."""
REST_NAME = "not bookable"
LEGEND_INDENT = 8
"""The cells a card's memory legend starts after, under its bar (the bar label's width), as
long as that costs it no line: a legend too long for the space under the bar starts at the
card's edge instead of wrapping."""
HELD_LOAD = 0.1
"""A load average shown on a card stays until the reading moves by this much."""
HELD_BUSY = 0.1
"""Busy cores shown on a card (its bar and figure) stay until the reading moves by this many
cores: other work's jitter of a tenth would otherwise redraw them at every refresh."""
HELD_MEMORY = 1 / 200
"""A memory figure shown on a card stays at most until the reading moves by this share of the
host's memory (120 MiB of 24 GiB: less than a cell of its bar)."""
HELD_SHARE = 1 / 100
"""...and a smaller figure until it moves by this share of itself (or by 1 MiB): "44.3M" of a
small slice, or "684M" of room, moves by what its digits say (as `probe --json` and the host
detail say it), not by what would move a 24 GiB bar."""


def held(shown: float | None, reading: float | None, step: float) -> float | None:
    """The figure to show: the reading, unless it is within `step` of what is shown."""
    if shown is None or reading is None or abs(reading - shown) >= step:
        return reading
    return shown


NO_CAGE = "no memory cage"
"""What a host's memory line says when its slice cannot cage a job (MemoryBook.problem)."""


def cage_problem(book: MemoryBook | None) -> str:
    """Why the host's book offers no cage ("" when it does, or when there is no book): the
    problem `status` and the runner give, from the snapshot's slice facts."""
    return book.problem if book is not None else ""


def shown_figures(host: HostSnapshot, book: MemoryBook | None) -> HostFigures:
    """The host's figures as a card or detail view shows them: a book without a cage has no
    slice cap and no room to offer, whatever its numbers say."""
    figures = figures_of(host, book)
    if cage_problem(book):
        return dataclasses.replace(figures, slice_cap=None, room=None)
    return figures


def no_cage_text(problem: str) -> Text:
    """The line under a memory bar whose slice cannot cage a job: that, and why."""
    return Text(f"✗ {NO_CAGE}: {problem}", style="yellow")


def used_segment(used: int) -> BarSegment:
    """A memory bar's one part when it shows no book: what is in use, none of it inside a slice
    the bar can show."""
    return BarSegment(used, OUTSIDE.style, "used", OUTSIDE.glyph)


def room_figures(room: int, slice_cap: int) -> str:
    """The figures beside a memory bar that shows a book: the room a new job can book, of the
    slice it is room in (the bar itself spans the host's MemTotal), as `used_figures` says
    what is used of the host: " room 1.23G/1.23G slice" fits the card's figures column
    (`.bar-figures`, 24 cells) with the widest sizes."""
    return f" room {format_size(room)}/{format_size(slice_cap)} slice"


def used_figures(used: int, total: int) -> str:
    """The figures beside a memory bar that shows only what is in use."""
    return f" {format_size(used)}/{format_size(total)} used"


def memory_segments(book: MemoryBook) -> tuple[BarSegment, ...]:
    """The memory book as a stacked bar: outside the slice, slice used, not yet grown, room,
    each in the legend's glyph (app/bar_legend.py)."""
    return tuple(
        BarSegment(value, mark.style, name, mark.glyph)
        for (name, value), mark in zip(book.bar(), HOST_MEMORY, strict=True)
    )


def shown_busy(busy: float | None) -> float | None:
    """Busy cores to the tenth the figures print: the bar draws what its figure says, so
    "0.0 of 2 cores busy" fills no cell however wide the bar is."""
    return None if busy is None else round(busy, 1)


def cores_segments(busy: float | None) -> tuple[BarSegment, ...]:
    """The cores bar: the busy cores, as their figure reads."""
    return (BarSegment(shown_busy(busy) or 0.0, "bold green", "busy", IN_USE.glyph),)


def cores_figures(busy: float | None, count: int) -> str:
    """The figures beside the cores bar: " 3.2 of 16 cores busy"."""
    shown = shown_busy(busy)
    return f" {'–' if shown is None else f'{shown:.1f}'} of {count} cores busy"


def legend(
    segments: tuple[BarSegment, ...], rest: str | None = None, indent: int = 0
) -> WholeParts:
    """One swatch and figure per bar segment, in the bar's glyphs and colours; `rest` names
    what the bar's filler stands for. A narrow card wraps it by whole entries, each laid out as
    taking its widest figure, so the entries keep their lines while the figures change;
    `indent` is the cells it starts after while that costs no line (WholeParts.indent)."""
    entries = [
        Text.assemble(
            (segment.glyph, segment.style), f" {segment.name} {format_size(int(segment.value))}"
        )
        for segment in segments
    ]
    space = [len(f"{segment.glyph} {segment.name} ") + SHORT_SIZE_WIDTH for segment in segments]
    if rest:
        entries.append(Text(f"{REST} {rest}", style="dim"))
        space.append(entries[-1].cell_len)
    return WholeParts(tuple(entries), space=tuple(space), indent=indent)


def titled_line(name: str, parts: list[str], style: str = "not bold") -> WholeParts:
    """A host's name in bold, then its figures: those that do not fit are left out whole."""
    head = Text(name, style="bold")
    if parts:
        head.append(f"   {parts[0]}", style=style)
    rest = tuple(Text(part, style=style) for part in parts[1:])
    return WholeParts((head, *rest), HOST_SEPARATOR, wrap=False, style=style)


def card_id(name: str) -> str:
    """A widget id from a host name (ids allow letters, digits, '-' and '_')."""
    return "host-" + "".join(c if c.isalnum() or c in "-_" else "_" for c in name)


class HostCard(Vertical):
    """One host: a cores line, a memory line and the history of busy cores."""

    host: var[HostSnapshot | None] = var(None)
    """The latest reading of this host."""
    book: var[MemoryBook | None] = var(None)
    """This host's memory book; when known, the memory bar shows it stacked."""
    gpu: var[str | None] = var(None)
    """This host's GPU memory free, as its glance says it."""
    glance: var[bool] = var(False)
    """Drawn as its first line alone, the host's headroom first."""

    def __init__(self, name: str, history_points: int, history_minutes: float) -> None:
        """Args:
            name: The host's name, shown as the card title.
            history_points: How many readings the sparkline keeps.
            history_minutes: How long those readings span, for the sparkline's label.
        """
        super().__init__(id=card_id(name), classes="host-card")
        self.host_name = name
        self._history: deque[float] = deque(maxlen=history_points)
        self._minutes = history_minutes
        self._shown: dict[str, float | None] = {}
        """The figures drawn last, by name, for `_held`."""
        # The parts are kept, not looked up: finding a widget walks the DOM each refresh.
        self._title = Static(Text(self.host_name, style="bold"), classes="host-name")
        self._cores_bar = StackedBar(classes="cores-bar")
        self._cores_figures = Label("", classes="bar-figures cores-figures")
        self._memory_bar = StackedBar(classes="memory-bar")
        self._memory_figures = Label("", classes="bar-figures memory-figures")
        self._legend = Static("", classes="memory-legend card-legend")
        self._sparkline = ScaledSparkline(classes="busy-history")
        self._sparkline.span = history_points
        self._readings = 0
        """Busy-cores readings since the card was made, for the sparkline's fixed columns."""
        self._figures: HostFigures | None = None
        """The figures the title line shows, as held."""

    def _held(self, name: str, reading: float | None, step: float) -> float | None:
        """`reading`, or the figure `name` shown last when the reading is within `step` of it."""
        shown = self._shown[name] = held(self._shown.get(name), reading, step)
        return shown

    def _held_size(self, name: str, reading: int, total: int) -> int:
        shown = self._shown.get(name) or 0
        step = min(total * HELD_MEMORY, max(MIB, HELD_SHARE * max(shown, reading)))
        return int(self._held(name, reading, step) or 0)

    def compose(self) -> ComposeResult:
        yield self._title
        with Horizontal(classes="bar-line"):
            yield Label("cores ", classes="bar-label")
            yield self._cores_bar
            yield self._cores_figures
        with Horizontal(classes="bar-line"):
            yield Label("memory", classes="bar-label")
            yield self._memory_bar
            yield self._memory_figures
        yield self._legend
        with Horizontal(classes="bar-line"):
            yield Label("history", classes="bar-label")
            yield self._sparkline
            yield Label(
                f" busy cores, last {self._minutes:g} min", classes="bar-figures history-label"
            )

    def watch_host(self, host: HostSnapshot | None) -> None:
        if host is None:
            return
        cores, memory = host.cores, host.memory
        busy = cores.busy_cores
        if busy is not None:
            self._history.append(busy)
            self._readings += 1
        shown = self._held("busy", busy, HELD_BUSY)
        self._cores_bar.total = cores.count
        self._cores_bar.segments = cores_segments(shown)
        show_text(self._cores_figures, cores_figures(shown, cores.count))
        if self.book is None or cage_problem(self.book):
            used = self._held_size("used", memory.used, memory.total)
            segments = (used_segment(used),)
            if self.book is None:
                self._show_memory(segments, memory.total, used_figures(used, memory.total))
            else:  # nothing of it is room: the rest is drawn as not bookable
                self._show_memory(segments, memory.total, f" {NO_CAGE}", REST_NAME)
                show_text(self._legend, WholeParts((no_cage_text(self.book.problem),),
                                                   indent=LEGEND_INDENT))
        figures = shown_figures(host, self.book)
        load = tuple(
            self._held(f"load{n}", value, HELD_LOAD) for n, value in enumerate(cores.loadavg)
        )
        figures = dataclasses.replace(
            figures,
            load=load,  # type: ignore[arg-type]
            available=self._held_size("available", memory.available, memory.total),
        )
        self._figures = figures
        self._show_title()
        self._sparkline.top = cores.count
        self._sparkline.seen = self._readings
        self._sparkline.data = tuple(self._history)

    def watch_glance(self) -> None:
        self._show_title()

    def watch_gpu(self) -> None:
        self._show_title()

    def _show_title(self) -> None:
        """The card's first line: its figures, or in a glance its headroom first (and the
        memory room, which its hidden memory bar would say)."""
        figures = self._figures
        if figures is None:
            return
        if self.glance:
            parts = headroom_parts(figures, self.gpu)
        else:
            parts = host_parts(figures, room=self.book is None)
        show_text(self._title, titled_line(self.host_name, parts))

    def watch_book(self, book: MemoryBook | None) -> None:
        if book is None or cage_problem(book):
            return  # its memory line is drawn with the host's reading, from what is used
        total = book.mem_total
        segments = tuple(
            dataclasses.replace(
                segment, value=self._held_size(segment.name, int(segment.value), total)
            )
            for segment in memory_segments(book)
        )
        room = self._held_size("room", max(0, book.usable), total)
        self._show_memory(segments, total, room_figures(room, book.slice_cap), REST_NAME)

    def _show_memory(
        self,
        segments: tuple[BarSegment, ...],
        total: int,
        figures: str,
        rest: str | None = None,
    ) -> None:
        """The memory line: the bar, its figures at the right and the legend under it."""
        self._memory_bar.total = total
        self._memory_bar.segments = segments
        self._memory_bar.rest = REST if rest else FREE.glyph
        show_text(self._memory_figures, figures)
        show_text(self._legend, legend(segments, rest, LEGEND_INDENT))


def peer_text(peer: PeerReading, glance: bool = False) -> WholeParts:
    """A peer's card: its figures as it reported them (in a glance its headroom first), or
    "not read: REASON"."""
    if peer.state != "read" or peer.host is None:
        why = f": {printable(peer.reason)}" if peer.reason else ""
        return titled_line(peer.name, [f"{peer.state}{why}"], style="not bold yellow")
    figures = shown_figures(peer.host, peer.book)
    parts = headroom_parts(figures) if glance else host_parts(figures)
    line = titled_line(peer.name, parts)
    if problem := cage_problem(peer.book):
        # Right after the name: of all the line, this is the last part to leave out.
        head, *rest = line.parts
        return dataclasses.replace(line, parts=(head, no_cage_text(problem), *rest))
    return line


class PeerCard(Static):
    """A peer: one line of the figures it last reported, or why it was not read."""

    reading: var[PeerReading | None] = var(None)
    """The latest reading of this peer."""
    glance: var[bool] = var(False)
    """Its headroom first, as the panel's glance says it."""

    def __init__(self, reading: PeerReading, *, glance: bool = False) -> None:
        """Args:
            reading: The peer's first reading; its name names the card.
            glance: Drawn as the panel's glance says it.
        """
        super().__init__(
            peer_text(reading, glance), id=card_id(reading.name), classes="host-card peer-card"
        )
        self.set_reactive(PeerCard.reading, reading)
        self.set_reactive(PeerCard.glance, glance)

    def watch_reading(self) -> None:
        if self.reading is not None:
            show_text(self, peer_text(self.reading, self.glance))

    def watch_glance(self) -> None:
        self.watch_reading()


class HostsPanel(SnapshotPanel):
    """Every host swarmdeck knows, one card each, updated in place."""

    TITLE = "Hosts"
    BINDINGS = [
        Binding("enter", "open_host", "Host detail"),
        Binding("up", "choose(-1)", "Previous host", show=False),
        Binding("down", "choose(1)", "Next host", show=False),
    ]

    chosen: var[int] = var(0)
    """The card `enter` opens, by its place in the panel (this host, then the peers)."""
    glance: var[bool] = var(False)
    """Its title line and each card's first line, the headroom first (a short screen, the
    panel out of focus: app/collapse.py); class `-glance`."""

    class Opened(Message):
        """`enter` on a host card: its detail view is wanted."""

        def __init__(self, name: str) -> None:
            super().__init__()
            self.name = name

    class Resized(Message):
        """The panel took another height (a legend wrapped, a peer came): on a short screen
        what the panels below may open depends on it (app/collapse.py)."""

    def on_resize(self, event: events.Resize) -> None:
        self.post_message(self.Resized())

    def __init__(self, history_points: int, history_minutes: float) -> None:
        """Args:
            history_points: How many readings each host's sparkline keeps.
            history_minutes: How long those readings span.
        """
        super().__init__(id="hosts")
        self._history_points = history_points
        self._history_minutes = history_minutes
        self._names: list[str] = []
        """The hosts the cards show, in the panel's order."""
        self._mounted: dict[str, Widget] = {}
        """The cards mounted so far, by widget id (the host's card, each peer's, the cluster's)."""

    def _cards(self) -> list[HostCard | PeerCard]:
        return [card for card in self.query(".host-card") if isinstance(card, HostCard | PeerCard)]

    def action_choose(self, step: int) -> None:
        if self._names:
            self.chosen = (self.chosen + step) % len(self._names)

    def watch_chosen(self, chosen: int) -> None:
        for index, card in enumerate(self._cards()):
            card.set_class(index == chosen, "-chosen")
            if index == chosen:
                self.scroll_to_widget(card, animate=False)

    def watch_glance(self, glance: bool) -> None:
        self.set_class(glance, "-glance")
        for card in self._cards():
            card.glance = glance

    @property
    def host_count(self) -> int:
        """The lines its glance shows: a card each (this host, the peers, a Slurm cluster)."""
        return len(self._mounted)

    def action_open_host(self) -> None:
        if self._names:
            self.post_message(self.Opened(self._names[min(self.chosen, len(self._names) - 1)]))

    def on_click(self, event: events.Click) -> None:
        """A click on a card chooses it."""
        cards = self._cards()
        widget = event.widget
        while widget is not None and widget is not self:
            if widget in cards:
                self.chosen = cards.index(widget)
                return
            widget = widget.parent  # type: ignore[assignment]

    def compose(self) -> ComposeResult:
        yield Label("reading this host…", id="hosts-waiting")

    def show(self, snapshot: Snapshot) -> None:
        # The cards are kept by name, not looked up: finding a widget walks the DOM.
        if not self._mounted:
            for waiting in self.query("#hosts-waiting"):
                waiting.remove()
        books = {book.host: book for book in snapshot.books}
        for host in snapshot.hosts:
            card = self._mounted.get(card_id(host.name))
            book = books.get(host.name)
            if not isinstance(card, HostCard):
                card = HostCard(host.name, self._history_points, self._history_minutes)
                card.set_reactive(HostCard.glance, self.glance)
                self._mounted[card_id(host.name)] = card
                self.mount(card)
                card.call_after_refresh(setattr, card, "book", book)
                card.call_after_refresh(setattr, card, "host", host)
                card.call_after_refresh(setattr, card, "gpu", gpu_free_text(snapshot.gpus, DASH))
            else:
                card.book = book
                card.host = host
                card.gpu = gpu_free_text(snapshot.gpus, DASH)
        for peer in snapshot.peers:
            peer_card = self._mounted.get(card_id(peer.name))
            if not isinstance(peer_card, PeerCard):
                peer_card = PeerCard(peer, glance=self.glance)
                self._mounted[card_id(peer.name)] = peer_card
                self.mount(peer_card)
            else:
                peer_card.reading = peer
        names = [host.name for host in snapshot.hosts] + [peer.name for peer in snapshot.peers]
        if names != self._names:
            self._names = names
            self.call_after_refresh(self.watch_chosen, self.chosen)
        if snapshot.cluster is not None:
            cluster = self._mounted.get("slurm-cluster")
            if not isinstance(cluster, Static):
                cluster = Static(cluster_text(snapshot.cluster), id="slurm-cluster",
                                 classes="host-card peer-card")
                self._mounted["slurm-cluster"] = cluster
                self.mount(cluster)
            else:
                show_text(cluster, cluster_text(snapshot.cluster))
