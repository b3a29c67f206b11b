"""Rich tables for `swarmdeck status` and `swarmdeck config show`.

Each section shows the columns its app panel chose, its cells made by the same functions
(swarmdeck.views), so the command line and the control room say the same thing the same way.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from swarmdeck.printable import printable, printable_text
from swarmdeck.probes.peer_cache import PeerReading
from swarmdeck.probes.slice_owner import read_owner
from swarmdeck.sizes import format_size
from swarmdeck.views import gpus, hosts, jobs, locks, records, sessions, slurm
from swarmdeck.views.cells import Cell, Columns, in_order

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


def hosts_table(snapshot: Snapshot) -> Table:
    table = Table(title="Hosts", title_justify="left")
    table.add_column("host")
    for _, label in hosts.COLUMNS:
        table.add_column(label, justify="right")
    for host in snapshot.hosts:
        cells = hosts.host_cells(hosts.figures_of(host, snapshot.book_of(host.name)))
        table.add_row(host.name, *in_order(cells, hosts.COLUMNS))
    for peer in snapshot.peers:
        table.add_row(*peer_cells(peer))
    return table


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
    title: str, columns: Columns, rows: Iterable[Mapping[str, Cell]], empty: str
) -> RenderableType:
    """A section's table: the chosen columns, one row per item; plain text is never markup.
    An empty section is one line saying so."""
    items = list(rows)
    if not items:
        return Text.assemble((title, "italic"), "  ", (empty, "dim"))
    table = Table(title=title, title_justify="left")
    for _, label in columns:
        table.add_column(label)
    for cells in items:
        table.add_row(*(as_text(cell) for cell in in_order(cells, columns)))
    return table


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


def sections(snapshot: Snapshot, now: float) -> list[RenderableType]:
    """Everything below the hosts, in the order the control room lays it out; the jobs in its
    Jobs panel's order."""
    job_rows = [jobs.job_cells(job, now) for job in jobs.panel_order(snapshot.jobs)]
    if snapshot.cluster is not None:
        job_rows += [slurm.cluster_job_cells(job, now) for job in snapshot.cluster.jobs]
    session_rows = [sessions.session_cells(session, now) for session in snapshot.sessions]
    alert_rows = [records.alert_cells(alert, now) for alert in snapshot.alerts]
    finding_rows = [records.finding_cells(finding, now) for finding in snapshot.findings]
    kill_rows = [records.kill_cells(request, now) for request in snapshot.kill_requests]
    return [
        cells_table("Jobs", jobs.STATUS_COLUMNS, job_rows, "no caged jobs"),
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
                f" ({book.placement}); room {format_size(book.room)}",
                markup=False,
            )
            owner = read_owner(book.slice_path) if book.slice_path else None
            if owner is not None:
                when = time.strftime("%Y-%m-%d %H:%M", time.localtime(owner.set_at))
                console.print(
                    f"slice cap {format_size(owner.cap)} set {when} by the ledger"
                    f" {owner.ledger} (config {owner.config or 'defaults'})",
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
