"""A host's figures as words, said once: the Hosts panel, `status` and the heavy-command hook all
show cores, load, threads, memory and room through these functions.

Plain strings only (no Rich), because the hook path imports this module.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from swarmdeck.sizes import format_size

if TYPE_CHECKING:
    from swarmdeck.probes.gpu import GpuSnapshot
    from swarmdeck.probes.host import HostSnapshot
    from swarmdeck.probes.memory_book import MemoryBook

DASH = "–"
"""A figure a face does not have; the hook says "not read" instead."""


@dataclass(frozen=True)
class HostFigures:
    """What every face shows of one host; None where it was not read."""

    cores: int | None = None
    busy_cores: float | None = None
    """Cores busy since the previous sample; None on a first sample."""
    load: tuple[float, float, float] | None = None
    threads_free: int | None = None
    heavy_threads: int | None = None
    used: int | None = None
    total: int | None = None
    available: int | None = None
    slice_cap: int | None = None
    room: int | None = None
    """What a new booking must fit in (MemoryBook.usable); None without a book."""


def figures_of(host: HostSnapshot, book: MemoryBook | None) -> HostFigures:
    """A host reading and its memory book as the figures every face shows."""
    return HostFigures(
        cores=host.cores.count,
        busy_cores=host.cores.busy_cores,
        load=host.cores.loadavg,
        threads_free=host.cores.threads_free,
        heavy_threads=host.cores.heavy_threads,
        used=host.memory.used,
        total=host.memory.total,
        available=host.memory.available,
        slice_cap=book.slice_cap if book is not None else host.memory.slice_cap,
        room=book.usable if book is not None else None,
    )


def _size(value: int | None, missing: str) -> str:
    return missing if value is None else format_size(max(0, value))


def _whole(value: int | None, missing: str) -> str:
    return missing if value is None else str(value)


def _threads(figures: HostFigures, missing: str) -> str:
    """Threads free of the budget ("12/16"); an overbooked budget reads "0/2 (8 over)"."""
    free, budget = figures.threads_free, _whole(figures.heavy_threads, missing)
    if free is not None and free < 0:
        return f"0/{budget} ({-free} over)"
    return f"{_whole(free, missing)}/{budget}"


def host_cells(figures: HostFigures, missing: str = DASH) -> dict[str, str]:
    """Each figure as the text every face shows for it, keyed as in COLUMNS."""
    busy = figures.busy_cores
    return {
        "cores": _whole(figures.cores, missing),
        "busy": missing if busy is None else f"{busy:.1f}/{_whole(figures.cores, missing)}",
        "load": missing if figures.load is None else " ".join(f"{v:.2f}" for v in figures.load),
        "threads": _threads(figures, missing),
        "memory": f"{_size(figures.used, missing)}/{_size(figures.total, missing)}",
        "available": _size(figures.available, missing),
        "slice_cap": _size(figures.slice_cap, missing),
        "room": _size(figures.room, missing),
    }


COLUMNS = (
    ("busy", "cores busy"),
    ("load", "load 1/5/15"),
    ("threads", "threads free"),
    ("memory", "memory used"),
    ("available", "available"),
    ("slice_cap", "slice cap"),
    ("room", "memory room"),
)
"""(key, label) of the figures `status` shows per host after the host's name."""


def host_parts(
    figures: HostFigures, gpu: str | None = None, missing: str = DASH, *, room: bool = True
) -> list[str]:
    """The host's figures as the parts of its line: "16 cores", "load 2.50 1.00 0.50", …;
    without the memory room when `room` is false (a card whose memory bar says it)."""
    cells = host_cells(figures, missing)
    parts = [
        f"{cells['cores']} cores",
        f"load {cells['load']}",
        f"threads free {cells['threads']}",
        f"available {cells['available']}",
        f"slice cap {cells['slice_cap']}",
    ]
    if room:
        parts.append(f"memory room {cells['room']}")
    if gpu is not None:
        parts.append(gpu if gpu == "no GPU" else f"GPU free {gpu}")
    return parts


def headroom_parts(figures: HostFigures, gpu: str | None = None, missing: str = DASH) -> list[str]:
    """The host's figures, what a new job can still have first: threads free, memory room, GPU
    memory free, then cores busy, load and available. A glance at a host on one line (the Hosts
    panel on a short screen) leaves out whole parts from the end."""
    cells = host_cells(figures, missing)
    parts = [f"threads free {cells['threads']}"]
    if figures.room is not None:
        parts.append(f"memory room {cells['room']}")
    if gpu is not None:
        parts.append(gpu if gpu == "no GPU" else f"GPU free {gpu}")
    return [
        *parts,
        f"{cells['busy']} cores busy",
        f"load {cells['load']}",
        f"available {cells['available']}",
    ]


def gpu_free_text(gpus: GpuSnapshot, missing: str) -> str:
    """This host's GPU memory free per card ("60G, 24G"), "no GPU", or why the cards were not
    read (the reading's state)."""
    from swarmdeck.probes.nvml import READY

    if gpus.state != READY:
        return gpus.state
    free = [
        format_size(card.memory_free) if isinstance(card.memory_free, int) else missing
        for card in gpus.cards
    ]
    return ", ".join(free) if free else "no GPU"


HOST_SEPARATOR = " · "


def host_line(
    figures: HostFigures, gpu: str | None = None, missing: str = DASH, *, room: bool = True
) -> str:
    """The host on one line: "16 cores · load 2.50 1.00 0.50 · threads free 12/16 · …"."""
    return HOST_SEPARATOR.join(host_parts(figures, gpu, missing, room=room))
