"""Rich tables for `swarmdeck status` and `swarmdeck config show`.

Each section shows the columns its app panel chose, its cells made by the same functions
(swarmdeck.views), so the command line and the control room say the same thing the same way.
On a narrow terminal a table leaves out whole columns, those a person reads last first, rather
than cut its words ("availab…", "runt…"): `FittedTable`.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, Group, RenderableType
from rich.table import Table
from rich.text import Text

from swarmdeck.printable import printable, printable_text
from swarmdeck.probes.peer_cache import PeerReading
from swarmdeck.probes.slice_owner import read_owner
from swarmdeck.sizes import format_size
from swarmdeck.views import gpus, hosts, jobs, locks, records, sessions, slurm
from swarmdeck.views.cells import Cell, Columns, in_order
from swarmdeck.words import counted

if TYPE_CHECKING:
    from swarmdeck.config import Config
    from swarmdeck.snapshot import Snapshot


class ReportConsole(Console):
    """A Console that leaves a closed stdout pipe to the command line, which ends quietly with
    141 (cli.main); Rich's own answer ends the process with 1."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        # Called while Rich handles the BrokenPipeError: this raises it again, to the caller.
        raise


PADDING = 2
"""Cells a Rich table pads each column with (one each side)."""


@dataclass(frozen=True)
class ColumnWidths:
    """A column's narrowest width with every word whole, and its width with no line wrapped."""

    narrowest: int
    widest: int


def column_widths(texts: Iterable[str]) -> ColumnWidths:
    """The widths of a column holding these texts (its label among them)."""
    words = [cell_len(word) for text in texts for word in text.split()]
    lines = [cell_len(line) for text in texts for line in text.splitlines()]
    return ColumnWidths(max(words, default=1), max(lines, default=1))


def shared_widths(columns: Sequence[ColumnWidths], space: int) -> list[int] | None:
    """Widths for the columns in `space` cells (padding and rules taken off already): each at
    least its narrowest, the cells left over given one at a time to the column wanting most;
    None when every column fits whole (the table lays itself out)."""
    if sum(column.widest for column in columns) <= space:
        return None
    widths = [column.narrowest for column in columns]
    for _ in range(max(0, space - sum(widths))):
        wants = [column.widest - width for column, width in zip(columns, widths, strict=True)]
        most = max(range(len(wants)), key=wants.__getitem__)
        if wants[most] <= 0:
            break
        widths[most] += 1
    return widths


@dataclass(frozen=True)
class FittedTable:
    """A titled table of rows by column key that fits the width it is printed in with every
    word whole: while its narrowest layout is wider, the columns of `giving_way` are left out
    in that order (a column the rows all say the same of, in `alike`, goes first), and the
    columns left share the width, none narrower than its longest word."""

    title: str
    columns: Columns
    rows: Sequence[Mapping[str, Cell]]
    giving_way: Sequence[str] = ()
    right: frozenset[str] = frozenset()
    """Keys of the columns of figures, aligned right."""
    alike: frozenset[str] = frozenset()
    """Keys of the columns left out first when every row holds the same in them."""

    def widths_of(self, key: str, label: str) -> ColumnWidths:
        return column_widths([label, *(as_text(cells[key]).plain for cells in self.rows)])

    def order_of_giving_way(self) -> list[str]:
        same = [key for key in self.alike
                if len({str(cells[key]) for cells in self.rows}) <= 1]
        return same + [key for key in self.giving_way if key not in same]

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[Table]:
        columns = list(self.columns)

        def space() -> int:
            return options.max_width - (PADDING + 1) * len(columns) - 1

        for key in self.order_of_giving_way():
            if sum(self.widths_of(*column).narrowest for column in columns) <= space():
                break
            columns = [column for column in columns if column[0] != key]
        widths = shared_widths([self.widths_of(*column) for column in columns], space())
        table = Table(title=self.title, title_justify="left")
        for index, (key, label) in enumerate(columns):
            table.add_column(label, justify="right" if key in self.right else "left",
                             width=None if widths is None else widths[index])
        for cells in self.rows:
            table.add_row(*(as_text(cell) for cell in in_order(cells, columns)))
        yield table


HOST_GIVING_WAY = ("slice_cap", "memory", "load")
"""The hosts table's columns left out on a narrow terminal, first to last: what the memory
room and the available memory say already, then the load the busy cores say too."""


def hosts_table(snapshot: Snapshot) -> FittedTable:
    rows = []
    for host in snapshot.hosts:
        cells = hosts.host_cells(hosts.figures_of(host, snapshot.book_of(host.name)))
        rows.append({"host": host.name, **cells})
    columns = (("host", "host"), *hosts.COLUMNS)
    for peer in snapshot.peers:
        rows.append(dict(zip([key for key, _ in columns], peer_cells(peer), strict=True)))
    return FittedTable("Hosts", columns, rows, HOST_GIVING_WAY,
                       right=frozenset(key for key, _ in hosts.COLUMNS))


def peer_cells(peer: PeerReading) -> tuple[str, ...]:
    """A peer's row of the hosts table: its own figures, or its state (the reason is printed
    below the table, where a long one is not wrapped into a narrow cell)."""
    if peer.host is None:
        return (peer.name, peer.state, *([""] * (len(hosts.COLUMNS) - 1)))
    cells = hosts.host_cells(hosts.figures_of(peer.host, peer.book))
    return (peer.name, *in_order(cells, hosts.COLUMNS))


def as_text(cell: Cell) -> Text:
    return cell if isinstance(cell, Text) else Text(cell)


def cells_table(
    title: str, columns: Columns, rows: Iterable[Mapping[str, Cell]], empty: str,
    giving_way: Sequence[str] = (), alike: frozenset[str] = frozenset(),
) -> RenderableType:
    """A section's table: the chosen columns, one row per item; plain text is never markup.
    On a narrow terminal the `giving_way` columns (and first the `alike` ones the rows all
    say the same of) are left out. An empty section is one line saying so."""
    items = list(rows)
    if not items:
        return Text.assemble((title, "italic"), "  ", (empty, "dim"))
    return FittedTable(title, columns, items, giving_way, alike=alike)


def gpus_section(snapshot: Snapshot) -> RenderableType:
    """The cards, their compute processes and who holds them quiesced; or why there are none."""
    cards = snapshot.gpus.cards
    if not cards:
        return cells_table("GPUs", gpus.CARD_COLUMNS, [], gpus.state_text(snapshot.gpus))
    parts: list[RenderableType] = [
        cells_table("GPUs", gpus.CARD_COLUMNS, [gpus.card_cells(card) for card in cards], ""),
        cells_table(
            "GPU processes", gpus.PROCESS_COLUMNS, gpus.process_rows(cards).values(),
            "no compute processes",
        ),
        printable_text(gpus.holder_line(snapshot.gpus.holders)),
    ]
    return Group(*parts)


LABEL_WIDTH = 60
"""The most characters of a job's label the Jobs table shows: a label is often a whole command
line, and piped (no terminal width to share) a 300-character one would make every row as wide;
`status --json` has it whole."""


def cut_label(cell: Cell) -> Cell:
    """A label cell of at most LABEL_WIDTH characters, its end replaced by "…" when cut."""
    text = as_text(cell)
    if cell_len(text.plain) <= LABEL_WIDTH:
        return cell
    text = text.copy()
    text.truncate(LABEL_WIDTH, overflow="ellipsis")
    return text


def left_out_line(snapshot: Snapshot) -> Text | None:
    """The line under the Jobs table saying how many finished jobs it leaves out, if any."""
    if not snapshot.jobs_left_out:
        return None
    older = counted(snapshot.jobs_left_out, "older finished job")
    return Text(f"{older} not shown: status --all", style="dim")


def sections(snapshot: Snapshot, now: float) -> list[RenderableType]:
    """Everything below the hosts, in the order the control room lays it out; the jobs in its
    Jobs panel's order, labels cut to LABEL_WIDTH, and a line saying how many older finished
    jobs were left out."""
    job_rows = [jobs.job_cells(job, now) for job in jobs.panel_order(snapshot.jobs)]
    if snapshot.cluster is not None:
        job_rows += [slurm.cluster_job_cells(job, now) for job in snapshot.cluster.jobs]
    job_rows = [{**cells, "label": cut_label(cells["label"])} for cells in job_rows]
    jobs_table = cells_table("Jobs", jobs.STATUS_COLUMNS, job_rows, "no caged jobs",
                             jobs.STATUS_GIVING_WAY, alike=frozenset({"host"}))
    left_out = left_out_line(snapshot)
    session_rows = [sessions.session_cells(session, now) for session in snapshot.sessions]
    alert_rows = [records.alert_cells(alert, now) for alert in snapshot.alerts]
    finding_rows = [records.finding_cells(finding, now) for finding in snapshot.findings]
    kill_rows = [records.kill_cells(request, now) for request in snapshot.kill_requests]
    return [
        jobs_table if left_out is None else Group(jobs_table, left_out),
        gpus_section(snapshot),
        cells_table("Agents", sessions.COLUMNS, session_rows, "no Claude Code sessions"),
        cells_table("Alerts", records.ALERT_COLUMNS, alert_rows, "no open alerts"),
        cells_table("Watchdog", records.FINDING_COLUMNS, finding_rows, "no findings"),
        cells_table("Kill requests", records.KILL_COLUMNS, kill_rows, "no kill requests"),
        cells_table(
            "Locks", locks.COLUMNS, locks.lock_table_rows(snapshot.locks, now).values(),
            "no workspace locks or owned directories",
        ),
    ]


PIPED_WIDTH = 1000
"""Columns for output that is not a terminal: wide enough that no table is squeezed, and a
Rich table is only as wide as its content, so nothing is padded out to it either."""


def status_console() -> Console:
    """A terminal's own width; piped, `COLUMNS` when set, else as wide as the content."""
    if sys.stdout.isatty() or os.environ.get("COLUMNS", "").strip():
        return ReportConsole()
    return ReportConsole(width=PIPED_WIDTH)


def print_status(snapshot: Snapshot, console: Console | None = None) -> None:
    console = console or status_console()
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(snapshot.taken_at))
    console.print(f"[bold]swarmdeck[/] status at {stamp}")
    console.print(hosts_table(snapshot))
    for book in snapshot.books:
        if book.backend:
            console.print(
                f"memory cage on {book.host}: {book.backend}, slice {book.slice_path}"
                f" ({book.placement}); room in the slice {format_size(book.room)}, on the"
                f" machine {format_size(book.machine_room)} (a job books within the smaller)",
                markup=False,
            )
            owner = read_owner(book.slice_path) if book.slice_path else None
            if owner is not None:
                when = time.strftime("%Y-%m-%d %H:%M", time.localtime(owner.set_at))
                pending = (
                    f"; the config now gives {format_size(book.slice_cap)}, which the next run"
                    " sets"
                    if owner.cap != book.slice_cap
                    else ""
                )
                console.print(
                    f"slice cap {format_size(owner.cap)} set {when} by the ledger"
                    f" {owner.ledger} (config {owner.config or 'defaults'}){pending}",
                    markup=False,
                )
        else:
            console.print(f"no memory cage on {book.host}: {book.problem}", markup=False)
    for peer in snapshot.peers:
        if peer.state != "read":
            why = f": {printable(peer.reason)}" if peer.reason else ""
            console.print(f"peer {peer.name} {peer.state}{why}", markup=False)
    if snapshot.cluster is not None:
        console.print(slurm.cluster_text(snapshot.cluster))
    for section in sections(snapshot, time.time()):
        console.print(section)


def print_config(config: Config, console: Console | None = None) -> None:
    """One `key = value  # source — meaning` line per key, never cut, so it can be copied; a
    list of more than one item is written as TOML writes it over lines, one item a line."""
    from swarmdeck.config import describe_config
    from swarmdeck.paths import config_path

    console = console or ReportConsole(soft_wrap=True)
    if config.path:
        source = str(config.path)
    else:
        source = f"no config file at {config_path()}; embedded defaults only"
    console.print(Text.assemble(("config ", "bold"), source))
    for line in describe_config(config):
        from_file = line.source != "default"
        value_style = "bold" if from_file else ""
        comment = (f"  # {line.source} — {line.doc}", "dim")
        key = (line.key, "bold cyan" if from_file else "cyan")
        if len(line.items) < 2:
            console.print(Text.assemble(key, " = ", (line.value, value_style), comment))
            continue
        console.print(Text.assemble(key, " = [", comment))
        for item in line.items:
            console.print(Text.assemble("    ", (item, value_style), ","))
        console.print("]")
