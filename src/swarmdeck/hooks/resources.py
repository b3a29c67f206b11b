"""The resource facts a heavy-command reminder shows: per host cores, threads, memory room, GPU.

Every figure comes from the probes the app and `status` use (host, memory book, GPU), so the
agent reads the numbers a person sees. A probe that fails makes its cell "not read"; the others
are still shown. A peer is described from the config and the figures the peer probe cached
(probes/peer_cache.py): the hook never opens SSH, so without fresh cached figures a peer is
"not read".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from swarmdeck.sizes import format_size

if TYPE_CHECKING:
    from swarmdeck.config import Config
    from swarmdeck.state import StateStore

NOT_READ = "not read"


@dataclass(frozen=True)
class HostFacts:
    """One host's row in the resource table."""

    name: str
    local: bool
    state: str
    """"read", "not read" or "disabled"."""
    reason: str = ""
    cores: int | None = None
    cores_in_use: float | None = None
    threads_free: int | None = None
    memory_room: int | None = None
    """What a new booking must fit in: the smaller of slice room and machine room."""
    slice_cap: int | None = None
    gpu: str = ""
    """Free memory per card ("12.0G, 40.1G"), "no GPU", or "not read"."""

    @property
    def readable(self) -> bool:
        return self.state == "read" and self.memory_room is not None

    def row(self) -> str:
        if self.state != "read":
            why = f" ({self.reason})" if self.reason else ""
            return f"{self.name}: {self.state}{why}"
        parts = [
            f"load {_number(self.cores_in_use)} on {self.cores} cores",
            f"threads free {self.threads_free if self.threads_free is not None else NOT_READ}",
            "memory room "
            + (format_size(max(0, self.memory_room)) if self.memory_room is not None else NOT_READ),
            f"GPU free {self.gpu or NOT_READ}",
        ]
        where = " (here)" if self.local else ""
        return f"{self.name}{where}: " + ", ".join(parts)


def _number(value: float | None) -> str:
    return NOT_READ if value is None else f"{value:.1f}"


def local_facts(config: Config, store: StateStore) -> HostFacts:
    """This host, read now: threads free, the book's room, GPU free, and the 1-minute load.

    Load stands in for busy cores because a busy figure needs two samples apart in time, which a
    hook cannot wait for; it is labelled as load so an overloaded host reads as such.
    """
    from swarmdeck.probes.host import host_snapshot, local_host_name

    name = local_host_name()
    try:
        host = host_snapshot(config, store)
    except (OSError, ValueError) as error:
        return HostFacts(name, True, NOT_READ, reason=str(error))
    room: int | None
    try:
        from swarmdeck.probes.ledger import memory_book

        book = memory_book(config, store, name)
        room, slice_cap = book.usable, book.slice_cap
    except Exception:  # the book is one cell; the rest of the row still shows
        room, slice_cap = None, host.memory.slice_cap
    return HostFacts(
        name=name,
        local=True,
        state="read",
        cores=host.cores.count,
        cores_in_use=host.cores.loadavg[0],
        threads_free=host.cores.threads_free,
        memory_room=room,
        slice_cap=slice_cap,
        gpu=gpu_free(config),
    )


def gpu_free(config: Config) -> str:
    """Free memory per card, "no GPU", or "not read"."""
    try:
        from swarmdeck.probes.gpu import gpu_snapshot
        from swarmdeck.probes.nvml import READY

        snapshot = gpu_snapshot(config.gpu.allowlist)
    except Exception:  # NVML failing is a "not read" cell, not a failed hook
        return NOT_READ
    if snapshot.state != READY:
        return snapshot.state
    free = [
        format_size(card.memory_free) if isinstance(card.memory_free, int) else NOT_READ
        for card in snapshot.cards
    ]
    return ", ".join(free) if free else "no GPU"


def peer_facts(config: Config) -> list[HostFacts]:
    """Configured peers from the config and each one's cached reading (one small file each)."""
    from swarmdeck.probes.peer_cache import current_reading

    rows = []
    for host in config.hosts:
        if not host.enabled:
            rows.append(HostFacts(host.name, False, "disabled", reason="enabled = false"))
            continue
        reading = current_reading(host.name, config.ui.refresh_interval)
        if reading.state != "read":
            rows.append(HostFacts(host.name, False, NOT_READ, reason=reading.reason))
        else:
            rows.append(remote_facts(host.name, reading.host))
    return rows


def remote_facts(name: str, host: dict[str, object]) -> HostFacts:
    """A peer's row from its own host object; a figure it did not give is "not read"."""

    def whole(key: str) -> int | None:
        value = host.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    room, machine_room = whole("room"), whole("machine_room")
    if room is not None and machine_room is not None:
        room = min(room, machine_room)
    load = host.get("load1")
    return HostFacts(
        name=name,
        local=False,
        state="read",
        cores=whole("cores"),
        cores_in_use=float(load) if isinstance(load, int | float) else None,
        threads_free=whole("threads_free"),
        memory_room=room,
        slice_cap=whole("slice_cap"),
    )
