"""Rich tables for `swarmdeck status` and `swarmdeck config show`."""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from swarmdeck.sizes import format_size

if TYPE_CHECKING:
    from swarmdeck.config import Config
    from swarmdeck.snapshot import Snapshot


def _fmt(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


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
    return table


def records_table(title: str, rows: Iterable[Any], empty: str) -> Table:
    """A table of any snapshot list, its columns taken from the items' JSON form."""
    from swarmdeck.snapshot import as_json

    items = [as_json(row) for row in rows]
    table = Table(title=title, title_justify="left")
    if not items:
        table.add_column(empty, style="dim")
        return table
    columns = [key for key, value in items[0].items() if not isinstance(value, list | dict)]
    for column in columns:
        table.add_column(column)
    for item in items:
        table.add_row(*(Text(_fmt(item.get(column))) for column in columns))
    return table


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
    for key, title in (
        ("jobs", "Jobs"),
        ("gpus", "GPUs"),
        ("sessions", "Agents"),
        ("alerts", "Alerts"),
        ("findings", "Watchdog"),
        ("kill_requests", "Kill requests"),
        ("locks", "Locks"),
    ):
        console.print(records_table(title, getattr(snapshot, key), f"no {title.lower()}"))


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
