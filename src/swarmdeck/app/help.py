"""The help screen: every key the control room answers to, from the bindings themselves (the
app's, each panel's and the keys Textual's widgets answer to), and what the words and glyphs
of the panels mean; the bars' glyphs from their one legend (app/bar_legend.py)."""

from __future__ import annotations

from collections.abc import Collection, Iterable

from rich.cells import cell_len
from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Label, Static

from swarmdeck.app import bar_legend
from swarmdeck.app.agent_tree import FOLDED, SHOWN_FINISHED, STATUS_MARKS, SessionTree
from swarmdeck.app.detail import JOB_PARTS
from swarmdeck.app.hosts import REST_NAME
from swarmdeck.probes.memory_book import BAR_PARTS


def _in_order(marks: Iterable[bar_legend.Mark], names: Iterable[str]) -> str:
    """A bar's glyphs left to right, each with the name of its part on that bar."""
    return "  ".join(f"{mark.glyph} {name}" for mark, name in zip(marks, names, strict=True))


BARS: tuple[tuple[str, str], ...] = (
    *((mark.glyph, mark.meaning) for mark in bar_legend.MARKS),
    ("host memory", "left to right: " + _in_order(bar_legend.HOST_MEMORY, BAR_PARTS)
     + f"  {bar_legend.NOT_BOOKABLE.glyph} {REST_NAME}"),
    ("job memory", "over its cap, left to right: "
     + _in_order(bar_legend.JOB_MEMORY, JOB_PARTS) + f"  {bar_legend.FREE.glyph} free"),
    bar_legend.SPARKLINE,
)
"""The help's "Bars" section, written from the legend every bar draws with."""

GLOSSARY: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (
    ("Bars", BARS),
    ("Hosts", (
        ("N of M cores busy", "cores of the host computing now (N, measured over the last "
         "refresh) of all M cores it has"),
        ("load", "the whole host's run-queue over 1, 5 and 15 minutes; above its cores, "
         "threads wait for a core and every job runs slower"),
        ("threads free A/B (N over)", "A threads of the host's heavy-thread budget B "
         "(cores.heavy_threads, else its cores less one) that no running job has declared "
         "(with --threads; a run without --threads declares all B); when the jobs declared "
         "more than the budget it reads 0/B and says how many over: their threads share the "
         "cores. Cores busy is what is measured"),
        ("available", "the kernel's MemAvailable: what the whole host can still give, inside "
         "the slice or not"),
        ("slice cap", "the slice's cap: the host's MemTotal minus memory.reserve, the most "
         "all caged jobs together may hold; the whole that booked, used and room are parts of"),
        ("history", "busy cores over the last minutes, one bar per refresh"),
        ("enter", "the chosen host's detail (up/down choose among several): each part of "
         "the memory book and the busy cores over time, its GPU cards"),
        ("memory", "the memory book as a bar spanning the host's MemTotal: ▓ is outside the "
         "slice, the rest is the slice's (its glyphs: Bars, above)"),
        ("room A/B slice", "A: what a new job can book now, the slice's room (its cap "
         "less what its jobs hold and what admitted jobs are booked but have not grown to, "
         "and never more than the host has available); B: the slice cap it is room in"),
        ("memory room", "the same room, on a host's one-line glance and a peer's line"),
        ("GPU free", "free memory on each card of the host, in card order"),
    )),
    ("Jobs", (
        ("label", "the job's --label, else its command line"),
        ("state", "queued, admitted, running; once over, how it ended: ok, exit N, own cap "
         "250 (hit its cap), slice full 254, timed out 253, refused 252 (never admitted), "
         "SIGKILL 137 (killed by a signal); the detail (Enter) says it in full"),
        ("booked", "what admission set aside for it (its history's peak, or its cap)"),
        ("peak", "the most it held; ▲ when that reached its cap (its ceiling)"),
        ("cap", "the most its cage lets it hold"),
        ("runtime", "how long it has run (or ran, once over)"),
        ("current", "memory the job's cage holds now"),
        ("cores", "cores in use · threads computing at once / threads it declared"),
        ("owner", "the session that launched it (its id's first 8 characters), then "
         "/ the subagent where known"),
        ("host", "the machine it runs on (a peer's name for a migrated job, the cluster's "
         "for a Slurm job)"),
        ("admitted via", "what its booking came from: history, cap, the default, its family's or "
         "folder's runs, a ceiling it hit, squeezed (its cap after a full slice cut a run off), "
         "or settled (its working set, once it peaked)"),
        ("oom adj", "its oom_score_adj: the kernel kills higher numbers first"),
    )),
    ("Agents", (
        ("● / ○", "a live Claude Code process / a session that has ended"),
        (" ".join(STATUS_MARKS.values()), "subagent " + " / ".join(STATUS_MARKS)),
        (f"{FOLDED} / {SessionTree.ICON_NODE_EXPANDED.strip()}",
         "lines folded under this one / shown under it; enter folds and unfolds"),
        (f"{FOLDED} ✓ N finished", "a session's completed subagents older than its newest "
         f"{SHOWN_FINISHED}, folded into one line; enter opens it"),
        ("running / dispatched", "subagents running now / started in this session"),
        ("peak N at once", "the most subagents this session ran at the same moment"),
        ("eff", "effective parallelism: subagents at once on average while any ran"),
        ("hook only", "seen in hook events, its transcript not written yet"),
        ("sparkline", "subagents at once over the last hour for the highlighted session"),
        ("⚑ waiting for you", "above the tree and in the header: sessions stopped on a "
         "question or a permission prompt, waiting for a person's answer, the one waiting "
         "longest first, with how long"),
    )),
    ("GPUs", (
        ("gpu", "the card's index, as nvidia-smi numbers it"),
        ("name", "the card's model; under processes, the process's name"),
        ("memory used", "card memory in use / the card's total"),
        ("load", "how busy the card's compute was over the last sample"),
        ("memory load", "how busy the card's memory bus was"),
        ("temp", "the card's temperature"),
        ("problem", "what NVML reports wrong with the card (Xid errors, throttling), if any"),
        ("pid", "the compute process on the card"),
        ("user", "who runs it"),
        ("memory", "card memory that process holds"),
        ("standing", "why it may be there: gpu-run HOLDER (took the card with swarmdeck "
         "gpu-run), allowlisted, or foreign (neither)"),
        ("command", "its command line"),
    )),
    ("Locks", (
        ("kind", "lock (a swarmdeck lock file) or dir (a directory a session owns)"),
        ("state", "held (its holder is alive), stale (the holder is gone: l releases it), in "
         "use, no owner"),
        ("since", "how long ago the holder took it"),
        ("session", "the agent session holding it"),
        ("command / purpose", "the holder's command, or the purpose given for a directory"),
        ("path", "what is locked"),
    )),
    ("Watchdog", (
        ("level", "info, warning or critical"),
        ("age", "how long the finding has been open: since it first fired (its detail says "
         "how many watchdog passes saw it)"),
        ("rule", "the watchdog rule that fired; ✓ once acknowledged (a)"),
        ("subject", "what it is about: a process, a job, a card, a session"),
        ("message", "what the rule saw"),
        ("kill requests", "the second table: processes someone asked to stop (k), waiting "
         "for a person to approve (y) or deny (d)"),
        ("id", "the kill request's number"),
        ("host", "the machine the process runs on"),
        ("pid", "the process to stop"),
        ("user", "who runs it"),
        ("command", "its command line"),
        ("reason", "why the kill was asked for"),
        ("asked", "how long ago"),
    )),
    ("Alerts", (
        ("level", "info, warning or critical"),
        ("host", "the machine it came from"),
        ("message", "what happened"),
        ("×", "how many times it happened"),
        ("age", "since it last happened"),
    )),
)

KEY_WIDTH = 15
"""The key column's width: the longest key ("tab / shift+tab") fits."""

NAVIGATION: tuple[tuple[str, str], ...] = (
    ("enter", "Open the detail view of the selected job, session, subagent, host, finding or "
     "alert"),
    ("esc", "Close a detail view, a modal or this help"),
    ("tab / shift+tab", "Focus the next / previous panel"),
    ("↑ ↓ pgup pgdn", "Move the cursor in the focused table or tree"),
    ("→ ←", "Scroll the focused table's columns where its border says 'more columns →': "
     "those that did not fit come in at the right (the Jobs label stays)"),
    ("ctrl+p", "Command palette: every action by name"),
)
"""Keys Textual's widgets and screens answer to, which no binding of the app lists."""


READ_ONLY_MARK = "(off: read-only)"
"""What the help says after a key that changes something, when the app is read-only."""


def key_list(
    app_bindings: Iterable[BindingType],
    panels: Iterable[tuple[str, Iterable[BindingType], bool]],
    off: Collection[str] = frozenset(),
) -> list[tuple[str, str]]:
    """(key, what it does) for the app's bindings, each panel's (named for its panel) and the
    navigation keys; a binding with no description (a key's fallback elsewhere) is no key of
    its own. Keys that are off (read-only: an app action in `off`, every key of a panel whose
    flag says it is off) are still listed, marked so."""

    def shown(binding: Binding, what: str, is_off: bool) -> tuple[str, str]:
        return (binding.key_display or binding.key, f"{what} {READ_ONLY_MARK}" if is_off else what)

    keys = [shown(b, b.description, b.action in off) for b in app_bindings
            if isinstance(b, Binding) and b.description]
    for title, bindings, panel_off in panels:
        keys.extend(shown(b, f"{b.description} (in {title})", panel_off) for b in bindings
                    if isinstance(b, Binding) and b.description)
    return [*keys, *NAVIGATION]


def keys_table(keys: list[tuple[str, str]]) -> Table:
    """One key a line, right-aligned in its column; what it does wraps under itself."""
    grid = Table.grid(padding=(0, 2))
    grid.add_column(justify="right", no_wrap=True, min_width=KEY_WIDTH, style="bold")
    grid.add_column(overflow="fold")
    for key, what in keys:
        grid.add_row(Text(key), Text(what))
    return grid


TERM_WIDTH = 2 + max(cell_len(term) for _panel, terms in GLOSSARY for term, _ in terms)
"""The term column's width, indented 2 under its panel's name: the longest term fits, so every
panel's meanings start in the same column."""


def glossary() -> Group:
    """The "what the columns mean" section: each panel's name, then one term a line with its
    meaning beside it, wrapping under itself."""
    parts: list[Text | Table] = []
    for panel, terms in GLOSSARY:
        parts.append(Text(panel, style="bold"))
        grid = Table.grid(padding=(0, 2))
        grid.add_column(no_wrap=True, min_width=TERM_WIDTH, style="bold")
        grid.add_column(overflow="fold")
        for term, meaning in terms:
            grid.add_row(Text(f"  {term}"), Text(meaning))
        parts.append(grid)
    return Group(*parts)


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
            yield Static(keys_table(self._keys), id="help-keys")
            yield Label("\n[b]what the columns mean[/b]")
            yield Static(glossary(), id="help-columns")
            yield Label("[dim]Escape closes this help[/dim]")

    def action_close(self) -> None:
        self.dismiss(None)
