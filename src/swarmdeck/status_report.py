"""Rich tables for `swarmdeck status` and `swarmdeck config show`.

Each section shows the columns its app panel chose, its cells made by the same functions
(swarmdeck.views), so the command line and the control room say the same thing the same way.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from swarmdeck.probes.claude.sessions import SessionInfo
from swarmdeck.probes.gpu import GpuRow
from swarmdeck.probes.ledger import LedgerJob
from swarmdeck.probes.peer_cache import PeerReading
from swarmdeck.probes.records import Alert, Finding, KillRequest
from swarmdeck.sizes import format_size
from swarmdeck.views import gpus, jobs, locks, records, sessions
from swarmdeck.views.cells import Cell, Columns, in_order

if TYPE_CHECKING:
    from swarmdeck.config import Config
    from swarmdeck.snapshot import Snapshot


def hosts_table(snapshot: Snapshot) -> Table:
    table = Table(title="Hosts", title_justify="left")
    for column in ("host", "cores busy", "load 1/5/15", "threads free", "memory used", "available",
                   "slice cap"):
        table.add_column(column, justify="left" if column == "host" else "right")
    for host in snapshot.hosts:
        busy = host.cores.busy_cores
        table.add_row(
            host.name,
            "–" if busy is None else f"{busy:.1f}/{host.cores.count}",
            "/".join(f"{v:.2f}" for v in host.cores.loadavg),
            f"{host.cores.threads_free}/{host.cores.heavy_threads}",
            f"{format_size(host.memory.used)}/{format_size(host.memory.total)}",
            format_size(host.memory.available),
            format_size(host.memory.slice_cap),
        )
    for peer in snapshot.peers:
        table.add_row(*peer_cells(peer))
    return table


def peer_cells(peer: PeerReading) -> tuple[str, ...]:
    """A peer's row of the hosts table: its own figures, or its state (the reason is printed
    below the table, where a long one is not wrapped into a narrow cell)."""
    if peer.state != "read":
        return (peer.name, peer.state, "", "", "", "", "")
    host = peer.host

    def size(key: str) -> str:
        value = host.get(key)
        return format_size(value) if isinstance(value, int) else "–"

    busy, cores = host.get("busy_cores"), host.get("cores", "–")
    loads = [host.get(key) for key in ("load1", "load5", "load15")]
    return (
        peer.name,
        "–" if not isinstance(busy, int | float) else f"{busy:.1f}/{cores}",
        "/".join(f"{v:.2f}" if isinstance(v, int | float) else "–" for v in loads),
        f"{host.get('threads_free', '–')}/{host.get('heavy_threads', '–')}",
        f"{size('mem_used')}/{size('mem_total')}",
        size("mem_available"),
        size("slice_cap"),
    )


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
    rows = [row for row in snapshot.gpus if isinstance(row, GpuRow)]
    cards = [row.card for row in rows if row.card is not None]
    if not cards:
        why = gpus.state_text(rows[0].snapshot) if rows else "no GPU"
        return cells_table("GPUs", gpus.CARD_COLUMNS, [], why)
    parts: list[RenderableType] = [
        cells_table("GPUs", gpus.CARD_COLUMNS, [gpus.card_cells(card) for card in cards], ""),
        cells_table(
            "GPU processes", gpus.PROCESS_COLUMNS, gpus.process_rows(cards).values(),
            "no compute processes",
        ),
        gpus.holder_line(rows[0].snapshot.holders),
    ]
    return Group(*parts)


def sections(snapshot: Snapshot, now: float) -> list[RenderableType]:
    """Everything below the hosts, in the order the control room lays it out."""
    job_rows = [jobs.job_cells(job, now) for job in snapshot.jobs if isinstance(job, LedgerJob)]
    session_rows = [
        sessions.session_cells(session, now)
        for session in snapshot.sessions
        if isinstance(session, SessionInfo)
    ]
    alert_rows = [
        records.alert_cells(alert, now) for alert in snapshot.alerts if isinstance(alert, Alert)
    ]
    finding_rows = [
        records.finding_cells(finding, now)
        for finding in snapshot.findings
        if isinstance(finding, Finding)
    ]
    kill_rows = [
        records.kill_cells(request, now)
        for request in snapshot.kill_requests
        if isinstance(request, KillRequest)
    ]
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


def print_status(snapshot: Snapshot, console: Console | None = None) -> None:
    console = console or Console()
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
        else:
            console.print(f"no memory cage on {book.host}: {book.problem}", markup=False)
    for peer in snapshot.peers:
        if peer.state != "read":
            why = f": {peer.reason}" if peer.reason else ""
            console.print(f"peer {peer.name} {peer.state}{why}", markup=False)
    for section in sections(snapshot, time.time()):
        console.print(section)


def print_config(config: Config, console: Console | None = None) -> None:
    """One `key = value  # source — meaning` line per key, never cut, so it can be copied."""
    from swarmdeck.config import describe_config

    console = console or Console(soft_wrap=True)
    source = str(config.path) if config.path else "no config file; embedded defaults only"
    console.print(Text.assemble(("config ", "bold"), source))
    for line in describe_config(config):
        from_file = line.source != "default"
        console.print(
            Text.assemble(
                (line.key, "bold cyan" if from_file else "cyan"),
                " = ",
                (line.value, "bold" if from_file else ""),
                (f"  # {line.source} — {line.doc}", "dim"),
            )
        )
