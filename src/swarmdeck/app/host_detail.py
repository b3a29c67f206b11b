"""The detail view of one host (`enter` on its card in Hosts, `esc` back): its cores and memory
book now, each part of the book and the busy cores over time, and its GPU cards.

The parts over time are the memory bar's own (same names, glyphs and colours), one sparkline
each on the scale of what that part can reach: memory used outside the slice on the host's
memory, the slice's own parts on the slice cap, so a slice that is full reads full even on a
host whose slice is a small share of it. They are what the app saw since it started
(app/history.py): a restart begins them again.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Footer, Label, Static

from swarmdeck.app.bar import ScaledSparkline, StackedBar, bar_line
from swarmdeck.app.bar_legend import FREE as FREE_MARK
from swarmdeck.app.bar_legend import HOST_MEMORY
from swarmdeck.app.detail import DetailScreen
from swarmdeck.app.gpus import GpuCardView
from swarmdeck.app.history import HostPoint, RoomHistory
from swarmdeck.app.hosts import (
    NO_CAGE,
    REST,
    REST_NAME,
    cage_problem,
    cores_figures,
    cores_segments,
    legend,
    memory_segments,
    no_cage_text,
    room_figures,
    shown_figures,
    used_figures,
    used_segment,
)
from swarmdeck.app.quiet import show_text
from swarmdeck.durations import age_text
from swarmdeck.printable import printable
from swarmdeck.probes.gpu import GpuCard
from swarmdeck.probes.host import HostSnapshot
from swarmdeck.probes.memory_book import MemoryBook
from swarmdeck.sizes import format_size
from swarmdeck.snapshot import Snapshot
from swarmdeck.views.hosts import host_line
from swarmdeck.words import counted

UNREAD = " "
"""What the bars of a host that was not read are filled with: nothing, never the glyph of room."""
FREE = FREE_MARK.glyph
"""What the width past a bar's segments is filled with when the host was read (StackedBar's)."""
PART_SCALES = ("mem_total", "slice_cap", "slice_cap", "slice_cap")
"""What full height stands for in each part's sparkline, in MemoryBook.bar() order: outside the
slice, slice used, booked not yet grown, room."""


def part_top(point: HostPoint, index: int) -> int:
    """The full height of the `index`-th part's sparkline at this reading."""
    top = getattr(point, PART_SCALES[index])
    return top if top else point.mem_total


def span_text(points: list[HostPoint]) -> str:
    """How much time the readings cover, and that they start with the app."""
    if len(points) < 2:
        return (f"over time: {counted(len(points), 'reading')} since the app started,"
                " one per refresh")
    span = age_text(points[-1].taken_at - points[0].taken_at)
    return f"over time: the last {span}, {len(points)} readings (kept since the app started)"


def part_series(points: list[HostPoint], index: int) -> tuple[float, ...]:
    """The `index`-th part of the memory book at each reading that had a book."""
    return tuple(float(p.book[index][1]) for p in points if p.book is not None)


def part_figures(series: tuple[float, ...], top: int) -> str:
    """A part's figures: now and the most it reached, of the sparkline's full height."""
    if not series:
        return " no memory book read yet"
    return (f" now {format_size(int(series[-1]))}, most {format_size(int(max(series)))}"
            f" of {format_size(top)}")


def busy_figures(points: list[HostPoint]) -> str:
    """The busy cores' figures: now and the most, of the host's cores."""
    busy = [p.busy_cores for p in points if p.busy_cores is not None]
    if not busy:
        return " busy cores not read yet"
    return f" busy now {busy[-1]:.1f}, most {max(busy):.1f} of {points[-1].cores}"


class HostDetail(DetailScreen):
    """One host: its cores and memory book now and over time, and its GPU cards."""

    DEFAULT_CSS = """
    HostDetail .part-label {
        width: 26;
    }
    HostDetail .part-figures {
        width: 34;
        text-wrap: nowrap;
        text-overflow: ellipsis;
    }
    HostDetail #host-gpus {
        height: auto;
    }
    HostDetail #host-cage {
        padding-left: 8;
    }
    """

    def __init__(self, name: str, history: RoomHistory) -> None:
        """Args:
        name: The host, as its card names it.
        history: What the app saw of the host since it started.
        """
        super().__init__(id="host-detail")
        self.host_name = name
        self._history = history

    def compose(self) -> ComposeResult:
        with Vertical(classes="detail panel") as box:
            box.border_title = f"Host {self.host_name}"
            yield Static("", id="host-line", classes="host-name")
            yield bar_line("cores", StackedBar(id="host-cores"), figures_id="host-cores-figures")
            yield bar_line(
                "memory", StackedBar(id="host-memory"), figures_id="host-memory-figures"
            )
            yield Static("", id="host-legend", classes="memory-legend")
            yield Static("", id="host-cage")
            yield Label("", id="host-span")
            yield bar_line(
                "busy cores", ScaledSparkline(id="host-busy"), figures_id="host-busy-figures",
                part=True,
            )
            for index, mark in enumerate(HOST_MEMORY):
                yield bar_line(
                    Text(mark.glyph, style=mark.style), ScaledSparkline(id=f"host-part-{index}"),
                    label_id=f"host-part-name-{index}", figures_id=f"host-part-figures-{index}",
                    part=True,
                )
            yield Label("", id="host-gpus-title")
            yield Vertical(id="host-gpus")
        yield Footer()

    def follow(self, value: Any) -> None:
        snapshot: Snapshot = value
        host, book, why = self._reading(snapshot)
        line = self.query_one("#host-line", Static)
        if host is None:
            show_text(line, Text(why, style="yellow"))
            self._show_unread()
        else:
            show_text(line, host_line(shown_figures(host, book)))
            self._show_now(host, book)
        points = self._history.host(self.host_name)
        show_text(self.query_one("#host-span", Label), "\n" + span_text(points))
        busy = self.query_one("#host-busy", ScaledSparkline)
        busy.top = float(points[-1].cores) if points else 1.0
        busy.data = tuple(p.busy_cores or 0.0 for p in points if p.busy_cores is not None)
        show_text(self.query_one("#host-busy-figures", Label), busy_figures(points))
        named = next((p.book for p in reversed(points) if p.book is not None), None)
        for index, mark in enumerate(HOST_MEMORY):
            if named is not None:
                show_text(self.query_one(f"#host-part-name-{index}", Label),
                          Text.assemble((mark.glyph, mark.style), f" {named[index][0]}"))
            series = part_series(points, index)
            top = part_top(points[-1], index) if points else 1
            spark = self.query_one(f"#host-part-{index}", ScaledSparkline)
            spark.bar_style = mark.style
            spark.top = float(top)
            spark.data = series
            show_text(self.query_one(f"#host-part-figures-{index}", Label),
                      part_figures(series, top))
        self._show_gpus(snapshot, host)

    def _reading(
        self, snapshot: Snapshot
    ) -> tuple[HostSnapshot | None, MemoryBook | None, str]:
        """The host's latest reading and book from this snapshot, or why there is none."""
        for host in snapshot.hosts:
            if host.name == self.host_name:
                return host, snapshot.book_of(host.name), ""
        for peer in snapshot.peers:
            if peer.name == self.host_name:
                if peer.host is None:
                    reason = f": {printable(peer.reason)}" if peer.reason else ""
                    return None, None, f"{peer.state}{reason}"
                return peer.host, peer.book, ""
        return None, None, f"{self.host_name} is not in the latest snapshot"

    def _show_unread(self) -> None:
        """A host that was not read: its bars draw nothing (an unknown is never room), and
        their figures say so."""
        for bar in ("cores", "memory"):
            drawn = self.query_one(f"#host-{bar}", StackedBar)
            drawn.segments = ()
            drawn.rest = UNREAD
            show_text(self.query_one(f"#host-{bar}-figures", Label), " not read")
        show_text(self.query_one("#host-legend", Static), "")
        self._show_cage("")

    def _show_cage(self, problem: str) -> None:
        """The line under the memory bar that says the host has no cage and why, wrapped."""
        cage = self.query_one("#host-cage", Static)
        cage.display = bool(problem)
        show_text(cage, no_cage_text(problem) if problem else "")

    def _show_now(self, host: HostSnapshot, book: MemoryBook | None) -> None:
        cores = self.query_one("#host-cores", StackedBar)
        cores.total = host.cores.count
        cores.segments = cores_segments(host.cores.busy_cores)
        cores.rest = FREE
        show_text(self.query_one("#host-cores-figures", Label),
                  cores_figures(host.cores.busy_cores, host.cores.count))
        memory = self.query_one("#host-memory", StackedBar)
        problem = cage_problem(book)
        self._show_cage(problem)
        if book is None or problem:
            memory.total = host.memory.total
            memory.segments = (used_segment(host.memory.used),)
            memory.rest = REST if problem else FREE
            show_text(self.query_one("#host-memory-figures", Label),
                      f" {NO_CAGE}" if problem else
                      used_figures(host.memory.used, host.memory.total))
            show_text(self.query_one("#host-legend", Static),
                      "" if problem else "no memory book read")
            return
        segments = memory_segments(book)
        memory.total = book.mem_total
        memory.segments = segments
        memory.rest = REST
        show_text(self.query_one("#host-memory-figures", Label),
                  room_figures(max(0, book.usable), book.slice_cap))
        show_text(self.query_one("#host-legend", Static), legend(segments, REST_NAME))

    def _show_gpus(self, snapshot: Snapshot, host: HostSnapshot | None) -> None:
        """This host's cards: the local host's as the GPUs panel draws them, a peer's as one
        line each from the rows it sent."""
        title = self.query_one("#host-gpus-title", Label)
        box = self.query_one("#host-gpus", Vertical)
        cards: list[GpuCard] = snapshot.gpus.cards if host is not None and host.local else []
        peer_rows = [
            row for peer in snapshot.peers if peer.name == self.host_name
            for row in peer.gpus if isinstance(row, dict) and row.get("index") is not None
        ]
        title.display = bool(cards or peer_rows)
        show_text(title, "\n[b]GPUs[/b]")
        if peer_rows:
            text = "\n".join(_peer_card_line(row) for row in peer_rows)
            lines = next(box.query("#host-peer-gpus").results(Static), None)
            if lines is None:
                box.mount(Static(text, id="host-peer-gpus", markup=False))
            else:
                show_text(lines, text)
            return
        for card in cards:
            view = next(box.query(f"#gpu-card-{card.index}").results(GpuCardView), None)
            if view is None:
                view = GpuCardView(card.index)
                box.mount(view)
            if view.is_mounted:
                view.card = card
            else:  # drawn once its bar exists: a resize can redraw before the card composed
                view.call_after_refresh(setattr, view, "card", card)


def _peer_card_line(row: dict[str, object]) -> str:
    """A peer's card as it reported it: index, name, memory used of total."""
    used, total = row.get("memory_used"), row.get("memory_total")
    memory = (
        f"{format_size(used)}/{format_size(total)} used"
        if isinstance(used, int) and isinstance(total, int) else "memory not read"
    )
    return f"GPU {row.get('index')}   {row.get('name') or '?'}   {memory}"
