"""What the control room has seen since it started: each host's cores and memory book and each
running job's use of the machine, one point per snapshot, in bounded rings.

The detail views draw these as sparklines. Nothing is probed for them: the app hands every
snapshot it shows to `RoomHistory.observe`, and a reading seen before (a peer's cached figures,
a snapshot handed over twice) adds no point.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from swarmdeck.probes.host import HostSnapshot
from swarmdeck.probes.memory_book import MemoryBook
from swarmdeck.snapshot import Snapshot


@dataclass(frozen=True)
class HostPoint:
    """One reading of a host."""

    taken_at: float
    cores: int
    busy_cores: float | None
    mem_total: int
    book: tuple[tuple[str, int], ...] | None
    """The memory book's parts as its bar shows them (MemoryBook.bar()); None unless read."""
    slice_cap: int | None = None
    """The book's slice cap; None unless read."""


@dataclass(frozen=True)
class JobPoint:
    """One reading of a running job's use: since the snapshot before."""

    taken_at: float
    cores_in_use: float
    threads_at_once: float


class RoomHistory:
    """The last `points` readings of every host and running job the snapshots showed."""

    def __init__(self, points: int) -> None:
        """Args:
        points: How many readings each ring keeps.
        """
        self.points = max(1, points)
        self._hosts: dict[str, deque[HostPoint]] = {}
        self._jobs: dict[int, deque[JobPoint]] = {}

    def observe(self, snapshot: Snapshot) -> None:
        """Add this snapshot's readings; a job no longer listed is forgotten."""
        books = {book.host: book for book in snapshot.books}
        for host in snapshot.hosts:
            self._add_host(host, books.get(host.name))
        for peer in snapshot.peers:
            if peer.host is not None:
                self._add_host(peer.host, peer.book)
        listed = {job.id for job in snapshot.jobs}
        for job_id in list(self._jobs):
            if job_id not in listed:
                del self._jobs[job_id]
        for job in snapshot.jobs:
            if job.usage is None:
                continue
            # A peer's figures are as old as its reading: each reading adds one point.
            taken_at = job.figures_at if job.figures_from is not None else snapshot.taken_at
            if taken_at is None:
                continue
            ring = self._jobs.setdefault(job.id, deque(maxlen=self.points))
            if ring and ring[-1].taken_at >= taken_at:
                continue
            ring.append(JobPoint(taken_at, job.usage.cores_in_use, job.usage.threads_at_once))

    def host(self, name: str) -> list[HostPoint]:
        """The host's readings, oldest first."""
        return list(self._hosts.get(name, ()))

    def job(self, job_id: int) -> list[JobPoint]:
        """The job's readings while it ran, oldest first."""
        return list(self._jobs.get(job_id, ()))

    def _add_host(self, host: HostSnapshot, book: MemoryBook | None) -> None:
        ring = self._hosts.setdefault(host.name, deque(maxlen=self.points))
        if ring and ring[-1].taken_at >= host.taken_at:
            return
        ring.append(HostPoint(
            taken_at=host.taken_at,
            cores=host.cores.count,
            busy_cores=host.cores.busy_cores,
            mem_total=book.mem_total if book is not None else host.memory.total,
            book=book.bar() if book is not None else None,
            slice_cap=book.slice_cap if book is not None else None,
        ))
