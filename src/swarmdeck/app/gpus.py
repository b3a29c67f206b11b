"""The GPUs panel: each card's memory as a bar, its compute processes and who holds it quiesced."""

from __future__ import annotations

import dataclasses

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.reactive import var
from textual.widgets import Label, Static

from swarmdeck.app.bar import BarSegment, StackedBar
from swarmdeck.app.bar_legend import IN_USE
from swarmdeck.app.panel import Rows, TableDrawing, TablePanel
from swarmdeck.app.quiet import show_text
from swarmdeck.printable import printable_text
from swarmdeck.probes.gpu import GpuCard
from swarmdeck.sizes import format_size
from swarmdeck.snapshot import Snapshot
from swarmdeck.views.cells import in_order
from swarmdeck.views.gpus import PROCESS_COLUMNS, card_cells, holder_line, process_rows, state_text


class GpuCardView(Vertical):
    """One card: a memory bar with its figures, then name, load and temperature."""

    DEFAULT_CSS = """
    GpuCardView {
        height: auto;
    }
    GpuCardView .gpu-facts {
        color: $text-muted;
    }
    """

    card: var[GpuCard | None] = var(None)
    """The latest reading of this card."""

    def __init__(self, index: int) -> None:
        """Args:
        index: The card's NVML index, shown as its label.
        """
        super().__init__(id=f"gpu-card-{index}", classes="gpu-card")
        self._index = index

    def compose(self) -> ComposeResult:
        with Horizontal(classes="bar-line"):
            yield Label(f"GPU {self._index}", classes="bar-label")
            yield StackedBar(classes="gpu-memory-bar")
            yield Label("", classes="bar-figures gpu-memory-figures")
        yield Static("", classes="gpu-facts")

    def watch_card(self, card: GpuCard | None) -> None:
        if card is None:
            return
        bar = self.query_one(".gpu-memory-bar", StackedBar)
        used, total = card.memory_used, card.memory_total
        if isinstance(used, int) and isinstance(total, int) and total > 0:
            bar.total = total
            bar.segments = (BarSegment(used, "bold magenta", "used", IN_USE.glyph),)
            figures = f" {format_size(used)}/{format_size(total)} used"
        else:
            bar.segments = ()
            figures = f" memory {used}"
        show_text(self.query_one(".gpu-memory-figures", Label), figures)
        cells = card_cells(card)
        facts = Text(card.name)
        facts.append(f"   load {cells['load']}   memory load {cells['memory_load']}")
        facts.append(f"   {cells['temperature']}")
        if card.problem:
            facts.append(f"   {card.problem}", style="red")
        show_text(self.query_one(".gpu-facts", Static), facts)


class GpusPanel(TablePanel):
    """Every card of this host with its compute processes, allowlisted or not."""

    DEFAULT_CSS = """
    GpusPanel #gpu-cards {
        height: auto;
    }
    GpusPanel #gpu-holders {
        height: auto;
        color: $text-muted;
    }
    """

    TITLE = "GPUs"
    COLUMNS = PROCESS_COLUMNS
    EMPTY = "reading GPUs…"

    def __init__(self) -> None:
        super().__init__(id="gpus")

    def tally(self) -> str:
        """Its rows are the cards' processes, not what the panel is about: no count."""
        return ""

    def compose_above(self) -> ComposeResult:
        yield Vertical(id="gpu-cards")
        yield Static("", id="gpu-holders")

    def rows(self, snapshot: Snapshot, now: float) -> Rows:
        return {
            key: in_order(cells, PROCESS_COLUMNS)
            for key, cells in process_rows(snapshot.gpus.cards).items()
        }

    def drawing(self, snapshot: Snapshot) -> TableDrawing:
        # Every reading has a new `taken_at`, which the panel does not show.
        reading = dataclasses.replace(snapshot.gpus, taken_at=0.0)
        return dataclasses.replace(super().drawing(snapshot), above=reading)

    def draw(self, snapshot: Snapshot, drawing: TableDrawing) -> None:
        super().draw(snapshot, drawing)
        cards = snapshot.gpus.cards
        self.set_class(not cards, "-empty")
        empty = self.query_one(".empty", Label)
        empty.display = not cards
        if not cards:
            show_text(empty, state_text(snapshot.gpus))
        self._show_cards(cards)
        holders = snapshot.gpus.holders
        line = self.query_one("#gpu-holders", Static)
        line.display = bool(cards or holders)
        show_text(line, printable_text(holder_line(holders)))

    def _show_cards(self, cards: list[GpuCard]) -> None:
        box = self.query_one("#gpu-cards", Vertical)
        wanted = {f"gpu-card-{card.index}" for card in cards}
        for view in box.query(GpuCardView):
            if view.id not in wanted:
                view.remove()
        for card in cards:
            view = next(box.query(f"#gpu-card-{card.index}").results(GpuCardView), None)
            if view is None:
                view = GpuCardView(card.index)
                box.mount(view)
                view.call_after_refresh(setattr, view, "card", card)
            else:
                view.card = card
