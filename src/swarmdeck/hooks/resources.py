"""The resource facts a heavy-command reminder shows: per host cores, threads, memory room, GPU.

Every figure comes from the probes the app and `status` use (host, memory book, GPU), so the
agent reads the numbers a person sees. A probe that fails makes its cell "not read"; the others
are still shown. A peer is described from the config and the figures the peer probe cached
(probes/peer_cache.py): the hook never opens SSH, so without fresh cached figures a peer is
"not read".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from swarmdeck.views.hosts import HostFigures, figures_of, gpu_free_text, host_line

if TYPE_CHECKING:
    from swarmdeck.config import Config
    from swarmdeck.probes.peer_cache import PeerReading
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
    figures: HostFigures = field(default_factory=HostFigures)
    """Cores, load, threads and memory room (views/hosts.py formats them)."""
    gpu: str | None = None
    """Free memory per card ("12.0G, 40.1G"), "no GPU", or "not read"; None for a peer."""
    cage_problem: str = ""
    """Why no job can be caged there (the memory book's slice problem); "" when one can."""

    @property
    def memory_room(self) -> int | None:
        """What a new booking must fit in: the book's usable room."""
        return self.figures.room

    @property
    def slice_cap(self) -> int | None:
        return self.figures.slice_cap

    @property
    def readable(self) -> bool:
        return self.state == "read" and self.memory_room is not None

    @property
    def can_cage(self) -> bool:
        """Read, and a job can be caged there."""
        return self.readable and not self.cage_problem

    def row(self) -> str:
        if self.state != "read":
            why = f" ({self.reason})" if self.reason else ""
            return f"{self.name}: {self.state}{why}"
        where = " (here)" if self.local else ""
        return f"{self.name}{where}: " + host_line(self.figures, self.gpu, missing=NOT_READ)


def local_facts(config: Config, store: StateStore) -> HostFacts:
    """This host, read now: load, threads free, the book's room and GPU free.

    The load averages stand in for busy cores because a busy figure needs two samples apart in
    time, which a hook cannot wait for.
    """
    from swarmdeck.probes.host import host_snapshot, local_host_name

    name = local_host_name()
    try:
        host = host_snapshot(config, store)
    except (OSError, ValueError) as error:
        return HostFacts(name, True, NOT_READ, reason=str(error))
    try:
        from swarmdeck.probes.memory_book import memory_book

        book = memory_book(config, store, name)
    except Exception:  # the book is one cell; the rest of the row still shows
        book = None
    return HostFacts(
        name, True, "read", figures=figures_of(host, book), gpu=gpu_free(config),
        cage_problem=book.problem if book is not None else "",
    )


def gpu_free(config: Config) -> str:
    """Free memory per card, "no GPU", or "not read"."""
    try:
        from swarmdeck.probes.gpu import gpu_snapshot

        snapshot = gpu_snapshot(config.gpu.allowlist)
    except Exception:  # NVML failing is a "not read" cell, not a failed hook
        return NOT_READ
    return gpu_free_text(snapshot, NOT_READ)


def peer_facts(config: Config) -> list[HostFacts]:
    """Configured peers from the config and each one's cached reading (one small file each)."""
    from swarmdeck.probes.peer_cache import current_reading

    rows = []
    for host in config.hosts:
        if not host.enabled:
            rows.append(HostFacts(host.name, False, "disabled", reason="enabled = false"))
            continue
        rows.append(remote_facts(current_reading(host.name, config.ui.refresh_interval)))
    return rows


def remote_facts(reading: PeerReading) -> HostFacts:
    """A peer's row from its parsed reading; without a book its room is "not read"."""
    if reading.state != "read" or reading.host is None:
        return HostFacts(reading.name, False, NOT_READ, reason=reading.reason)
    book = reading.book
    return HostFacts(
        reading.name, False, "read", figures=figures_of(reading.host, book),
        cage_problem=book.problem if book is not None else "",
    )
