"""The help screen: every key the control room answers to, from the bindings themselves, and
what the words and glyphs of the panels mean."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Label, Static

from swarmdeck.app.hosts import MEMORY_LOOKS, REST, REST_NAME

GLOSSARY: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (
    ("Hosts", (
        ("cores busy", "cores computing now, measured over the last refresh"),
        ("threads free", "threads of the heavy-thread budget (cores.heavy_threads) that no "
         "running job has declared; cores busy is what is measured"),
        ("history", "busy cores over the last minutes, one bar per refresh"),
        ("memory", "the memory book, left to right: "
         + "  ".join(f"{glyph} {name}" for (_style, glyph), name in zip(
             MEMORY_LOOKS,
             ("used outside the slice", "slice used", "booked, not yet grown", "room"),
             strict=True,
         ))
         + f"  {REST} {REST_NAME}"),
        ("room", "what a new job can book now"),
    )),
    ("Jobs", (
        ("state", "queued, admitted, running; once over, how it ended: ok, exit N, own cap "
         "250 (hit its cap), slice full 254, timed out 253, refused 252 (never admitted)"),
        ("current", "memory the job's cage holds now"),
        ("peak", "the most it held; 'ceiling' when that reached its cap"),
        ("booked", "what admission set aside for it (its history's peak, or its cap)"),
        ("cap", "the most its cage lets it hold"),
        ("cores", "cores in use · threads computing at once / threads it declared"),
        ("admitted via", "what its booking came from: history, cap or the default"),
        ("oom adj", "its oom_score_adj: the kernel kills higher numbers first"),
    )),
    ("Agents", (
        ("● / ○", "a live Claude Code process / a session that has ended"),
        ("▶ ✓ ✗ ■", "subagent running / completed / failed / interrupted"),
        ("running / dispatched", "subagents running now / started in this session"),
        ("peak N at once", "the most subagents this session ran at the same moment"),
        ("eff", "effective parallelism: subagents at once on average while any ran"),
        ("hook only", "seen in hook events, its transcript not written yet"),
        ("sparkline", "subagents at once over the last hour for the highlighted session"),
    )),
)


def glossary_text() -> str:
    """The "what the columns mean" section as console markup."""
    lines: list[str] = []
    for panel, terms in GLOSSARY:
        lines.append(f"[b]{panel}[/b]")
        lines.extend(f"  [b]{term}[/b]  {meaning}" for term, meaning in terms)
    return "\n".join(lines)


class HelpScreen(ModalScreen[None]):
    """A modal listing the keys and the meaning of each column; Escape, q or ? closes it."""

    BINDINGS = [
        Binding("escape", "close", "Close"),
        Binding("q", "close", "Close", show=False),
        Binding("question_mark", "close", "Close", show=False),
    ]

    def __init__(self, keys: list[tuple[str, str]]) -> None:
        """Args:
            keys: (key, what it does) pairs to list.
        """
        super().__init__(id="help")
        self._keys = keys

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-box"):
            yield Label("[b]swarmdeck — keys[/b]")
            lines = [f"[b]{key:>8}[/b]  {what}" for key, what in self._keys]
            yield Static("\n".join(lines), id="help-keys")
            yield Label("\n[b]what the columns mean[/b]")
            yield Static(glossary_text(), id="help-columns")
            yield Label("[dim]Escape closes this help[/dim]")

    def action_close(self) -> None:
        self.dismiss(None)
