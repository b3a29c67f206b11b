"""The Hosts panel: cores, the memory book and a busy-cores sparkline for each host.

`up`/`down` choose a card (marked while the panel has the focus) and `enter` asks for its
detail view (app/host_detail.py) with a `HostsPanel.Opened` message.
"""

from __future__ import annotations

from collections import deque

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.reactive import var
from textual.widgets import Label, Static

from swarmdeck.app.bar import BarSegment, ScaledSparkline, StackedBar
from swarmdeck.app.panel import SnapshotPanel
from swarmdeck.app.quiet import show_text
from swarmdeck.probes.host import HostSnapshot
from swarmdeck.probes.ledger import MemoryBook
from swarmdeck.probes.peer_cache import PeerReading
from swarmdeck.sizes import format_size
from swarmdeck.snapshot import Snapshot
from swarmdeck.views.hosts import figures_of, host_line
from swarmdeck.views.slurm import cluster_text

MEMORY_LOOKS = (("bold yellow", "█"), ("bold cyan", "▓"), ("blue", "▒"), ("green", "░"))
"""Colour and glyph of the memory book's parts, in MemoryBook.bar() order: each part has its
own glyph, so the bar and its legend read the same without colour."""
REST = "·"
"""What fills the memory bar past its parts: memory the book does not offer to jobs."""
REST_NAME = "not bookable"


def memory_segments(book: MemoryBook) -> tuple[BarSegment, ...]:
    """The memory book as a stacked bar: outside the slice, slice used, not yet grown, room."""
    return tuple(
        BarSegment(value, style, name, glyph)
        for (name, value), (style, glyph) in zip(book.bar(), MEMORY_LOOKS, strict=True)
    )


def shown_busy(busy: float | None) -> float | None:
    """Busy cores to the tenth the figures print: the bar draws what its figure says, so
    "0.0 of 2 cores busy" fills no cell however wide the bar is."""
    return None if busy is None else round(busy, 1)


def cores_segments(busy: float | None) -> tuple[BarSegment, ...]:
    """The cores bar: the busy cores, as their figure reads."""
    return (BarSegment(shown_busy(busy) or 0.0, "bold green", "busy"),)


def cores_figures(busy: float | None, count: int) -> str:
    """The figures beside the cores bar: " 3.2 of 16 cores busy"."""
    shown = shown_busy(busy)
    return f" {'–' if shown is None else f'{shown:.1f}'} of {count} cores busy"


def legend(segments: tuple[BarSegment, ...], rest: str | None = None) -> Text:
    """One swatch and figure per bar segment, in the bar's glyphs and colours; `rest` names
    what the bar's filler stands for."""
    text = Text()
    for segment in segments:
        if text:
            text.append("  ")
        text.append(segment.glyph, style=segment.style)
        text.append(f" {segment.name} {format_size(int(segment.value))}")
    if rest:
        text.append(f"  {REST} {rest}", style="dim")
    return text


def card_id(name: str) -> str:
    """A widget id from a host name (ids allow letters, digits, '-' and '_')."""
    return "host-" + "".join(c if c.isalnum() or c in "-_" else "_" for c in name)


class HostCard(Vertical):
    """One host: a cores line, a memory line and the history of busy cores."""

    host: var[HostSnapshot | None] = var(None)
    """The latest reading of this host."""
    book: var[MemoryBook | None] = var(None)
    """This host's memory book; when known, the memory bar shows it stacked."""

    def __init__(self, name: str, history_points: int, history_minutes: float) -> None:
        """Args:
            name: The host's name, shown as the card title.
            history_points: How many readings the sparkline keeps.
            history_minutes: How long those readings span, for the sparkline's label.
        """
        super().__init__(id=card_id(name), classes="host-card")
        self._name = name
        self._history: deque[float] = deque(maxlen=history_points)
        self._minutes = history_minutes

    def compose(self) -> ComposeResult:
        yield Static(Text(self._name, style="bold"), classes="host-name")
        with Horizontal(classes="bar-line"):
            yield Label("cores ", classes="bar-label")
            yield StackedBar(classes="cores-bar")
            yield Label("", classes="bar-figures cores-figures")
        with Horizontal(classes="bar-line"):
            yield Label("memory", classes="bar-label")
            yield StackedBar(classes="memory-bar")
            yield Label("", classes="bar-figures memory-figures")
        yield Static("", classes="memory-legend")
        with Horizontal(classes="bar-line"):
            yield Label("history", classes="bar-label")
            yield ScaledSparkline(classes="busy-history")
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
        cores_bar = self.query_one(".cores-bar", StackedBar)
        cores_bar.total = cores.count
        cores_bar.segments = cores_segments(busy)
        show_text(self.query_one(".cores-figures", Label), cores_figures(busy, cores.count))
        if self.book is None:
            self._show_memory(
                (BarSegment(memory.used, "bold yellow", "used"),),
                memory.total,
                f" {format_size(memory.used)}/{format_size(memory.total)} used",
            )
        title = Text(host.name, style="bold")
        title.append("   " + host_line(figures_of(host, self.book), room=self.book is None),
                     style="not bold")
        show_text(self.query_one(".host-name", Static), title)
        history = self.query_one(".busy-history", ScaledSparkline)
        history.top = cores.count
        history.data = tuple(self._history)

    def watch_book(self, book: MemoryBook | None) -> None:
        if book is None:
            return
        self._show_memory(
            memory_segments(book),
            book.mem_total,
            f" room {format_size(max(0, book.usable))} of {format_size(book.mem_total)}",
            REST_NAME,
        )

    def _show_memory(
        self,
        segments: tuple[BarSegment, ...],
        total: int,
        figures: str,
        rest: str | None = None,
    ) -> None:
        """The memory line: the bar, its figures at the right and the legend under it."""
        memory_bar = self.query_one(".memory-bar", StackedBar)
        memory_bar.total = total
        memory_bar.segments = segments
        memory_bar.rest = REST if rest else "░"
        show_text(self.query_one(".memory-figures", Label), figures)
        show_text(self.query_one(".memory-legend", Static), legend(segments, rest))


def peer_text(peer: PeerReading) -> Text:
    """A peer's card: its figures as it reported them, or "not read: REASON"."""
    text = Text(peer.name, style="bold")
    if peer.state != "read" or peer.host is None:
        why = f": {peer.reason}" if peer.reason else ""
        text.append(f"   {peer.state}{why}", style="not bold yellow")
        return text
    if peer.host is not None:
        text.append("   " + host_line(figures_of(peer.host, peer.book)), style="not bold")
    return text


class PeerCard(Static):
    """A peer: one line of the figures it last reported, or why it was not read."""

    reading: var[PeerReading | None] = var(None)
    """The latest reading of this peer."""

    def __init__(self, reading: PeerReading) -> None:
        """Args:
            reading: The peer's first reading; its name names the card.
        """
        super().__init__(
            peer_text(reading), id=card_id(reading.name), classes="host-card peer-card"
        )
        self.set_reactive(PeerCard.reading, reading)

    def watch_reading(self, reading: PeerReading | None) -> None:
        if reading is not None:
            show_text(self, peer_text(reading))


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

    class Opened(Message):
        """`enter` on a host card: its detail view is wanted."""

        def __init__(self, name: str) -> None:
            super().__init__()
            self.name = name

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

    def _cards(self) -> list[HostCard | PeerCard]:
        return [card for card in self.query(".host-card") if isinstance(card, HostCard | PeerCard)]

    def action_choose(self, step: int) -> None:
        if self._names:
            self.chosen = (self.chosen + step) % len(self._names)

    def watch_chosen(self, chosen: int) -> None:
        for index, card in enumerate(self._cards()):
            card.set_class(index == chosen, "-chosen")

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
        for waiting in self.query("#hosts-waiting"):
            waiting.remove()
        books = {book.host: book for book in snapshot.books}
        for host in snapshot.hosts:
            cards = self.query(f"#{card_id(host.name)}").results(HostCard)
            card = next(cards, None)
            book = books.get(host.name)
            if card is None:
                card = HostCard(host.name, self._history_points, self._history_minutes)
                self.mount(card)
                card.call_after_refresh(setattr, card, "book", book)
                card.call_after_refresh(setattr, card, "host", host)
            else:
                card.book = book
                card.host = host
        for peer in snapshot.peers:
            peer_card = next(self.query(f"#{card_id(peer.name)}").results(PeerCard), None)
            if peer_card is None:
                self.mount(PeerCard(peer))
            else:
                peer_card.reading = peer
        names = [host.name for host in snapshot.hosts] + [peer.name for peer in snapshot.peers]
        if names != self._names:
            self._names = names
            self.call_after_refresh(self.watch_chosen, self.chosen)
        if snapshot.cluster is not None:
            cluster = next(self.query("#slurm-cluster").results(Static), None)
            if cluster is None:
                self.mount(Static(cluster_text(snapshot.cluster), id="slurm-cluster",
                                  classes="host-card peer-card"))
            else:
                cluster.update(cluster_text(snapshot.cluster))
