"""A peer's host object as `swarmdeck probe --json` prints it, built from the real types."""

from __future__ import annotations

import time
from typing import Any

from swarmdeck.probes.host import Cores, HostSnapshot, Memory
from swarmdeck.probes.memory_book import MemoryBook

GIB = 1024**3


def peer_host_object(
    name: str = "box2",
    cores: int = 16,
    load1: float = 2.5,
    threads_free: int = 12,
    slice_cap: int = 50 * GIB,
    room: int = 40 * GIB,
    machine_room: int = 30 * GIB,
) -> dict[str, Any]:
    """hosts[0] of a peer's snapshot JSON with these figures (64G of memory, 45G available)."""
    total, available = 64 * GIB, 45 * GIB
    host = HostSnapshot(
        name=name,
        local=True,
        taken_at=time.time(),
        cores=Cores(cores, None, (load1, 2.0, 1.0), cores, cores - threads_free),
        memory=Memory(total, available, total - slice_cap),
    )
    book = MemoryBook(
        host=name,
        slice_cap=slice_cap,
        unreclaimable=slice_cap - room,
        not_yet_grown=0,
        mem_total=total,
        mem_available=available,
        margin=available - machine_room,
        backend="v2",
        slice_path="/sys/fs/cgroup/swarmdeck.slice",
        placement="configured",
        problem="",
    )
    return {**host.to_json(), **book.host_fields(), "state": "read"}
