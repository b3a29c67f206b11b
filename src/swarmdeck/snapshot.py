"""One snapshot of everything the control room shows: the app, `status` and hooks read the same."""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from swarmdeck.actions.reconcile import reconcile
from swarmdeck.probes.claude.sessions import SessionsProbe, sessions_with_hooks
from swarmdeck.probes.gpu import gpu_snapshot
from swarmdeck.probes.host import CpuSampler, HostSnapshot, host_snapshot
from swarmdeck.probes.ledger import MemoryBook, ledger_jobs, memory_book
from swarmdeck.probes.locks import lock_rows
from swarmdeck.probes.peer_cache import PeerReading
from swarmdeck.probes.records import open_alerts, open_findings, pending_kill_requests
from swarmdeck.probes.slurm import SlurmReading, our_cluster_jobs, read_cluster
from swarmdeck.probes.usage import UsageTracker

if TYPE_CHECKING:
    from swarmdeck.config import Config
    from swarmdeck.probes.peer import PeerProber
    from swarmdeck.state import StateStore

SNAPSHOT_KEYS = (
    "taken_at",
    "hosts",
    "jobs",
    "gpus",
    "sessions",
    "alerts",
    "locks",
    "findings",
    "kill_requests",
)


@dataclass
class Snapshot:
    """Typed parts for the app; `to_json` flattens them into the snapshot contract."""

    taken_at: float
    hosts: list[HostSnapshot]
    jobs: list[Any] = field(default_factory=list)
    gpus: list[Any] = field(default_factory=list)
    sessions: list[Any] = field(default_factory=list)
    alerts: list[Any] = field(default_factory=list)
    locks: list[Any] = field(default_factory=list)
    findings: list[Any] = field(default_factory=list)
    kill_requests: list[Any] = field(default_factory=list)
    books: list[MemoryBook] = field(default_factory=list)
    """Each host's memory book; its figures also go into that host's JSON object."""
    peers: list[PeerReading] = field(default_factory=list)
    """Each configured peer's reading; in the JSON they follow this host in `hosts`."""
    cluster: SlurmReading | None = None
    """The Slurm cluster's nodes and jobs when [slurm] is enabled; in the JSON its nodes follow
    the peers in `hosts` (kind "slurm-node") and its jobs follow the ledger's in `jobs`."""

    def to_json(self) -> dict[str, Any]:
        """The snapshot JSON of DESIGN.md: every key present, each a list of flat objects."""
        out: dict[str, Any] = {"taken_at": self.taken_at}
        for key in SNAPSHOT_KEYS[1:]:
            out[key] = [as_json(item) for item in getattr(self, key)]
        books = {book.host: book for book in self.books}
        for host in out["hosts"]:
            book = books.get(host.get("name"))
            if book is not None:
                host.update(book_fields(book))
            host.setdefault("state", "read")
        out["hosts"] += [peer.to_json() for peer in self.peers]
        if self.cluster is not None:
            out["hosts"] += self.cluster.hosts_json()
            out["jobs"] += self.cluster.jobs_json()
        return out


def book_fields(book: MemoryBook) -> dict[str, Any]:
    """A memory book as flat keys of its host's JSON object."""
    return {
        "slice_backend": book.backend,
        "slice_path": book.slice_path,
        "slice_placement": book.placement,
        "slice_problem": book.problem,
        "slice_used": book.unreclaimable,
        "not_yet_grown": book.not_yet_grown,
        "room": book.room,
        "machine_room": book.machine_room,
        "used_outside_slice": book.used_outside_slice,
    }


def as_json(item: Any) -> Any:
    """An item's own JSON form when it has one, else its dataclass fields."""
    if hasattr(item, "to_json"):
        return item.to_json()
    if dataclasses.is_dataclass(item) and not isinstance(item, type):
        return dataclasses.asdict(item)
    return item


def take_snapshot(
    config: Config,
    store: StateStore,
    sampler: CpuSampler | None = None,
    sessions: SessionsProbe | None = None,
    usage: UsageTracker | None = None,
    peers: PeerProber | None = None,
) -> Snapshot:
    """Probe this host and read the store once; with `peers`, read every configured peer too.

    `sessions` is a SessionsProbe kept between snapshots (the app's), so each snapshot reads
    only what Claude Code appended since the last; without one the transcripts are read afresh.
    `usage` is a UsageTracker kept the same way: running jobs get their cores in use and
    threads at once since the previous snapshot (none on a tracker's first sight of a job).

    The one change made first: ledger rows whose runner died are closed as lost (and what they
    left in their cages stopped), so no reader ever shows a dead job as running.
    """
    host = host_snapshot(config, store, sampler)
    reconcile(store, host.name)
    return Snapshot(
        taken_at=time.time(),
        hosts=[host],
        jobs=list(ledger_jobs(store, host.name, usage)),
        books=[memory_book(config, store, host.name)],
        gpus=list(gpu_snapshot(config.gpu.allowlist).as_rows()),
        sessions=sessions_with_hooks(sessions or SessionsProbe(), store),
        locks=list(lock_rows(config.locks.work_root)),
        alerts=open_alerts(store),
        findings=open_findings(store),
        kill_requests=pending_kill_requests(store),
        peers=peers.read_all(config) if peers is not None else [],
        cluster=(
            read_cluster(config.slurm, our_cluster_jobs(store)) if config.slurm.enabled else None
        ),
    )


def one_shot_snapshot(
    config: Config, store: StateStore, window: float = 0.2, peers: PeerProber | None = None
) -> Snapshot:
    """A snapshot for a caller that takes only one (`status`, `probe`): CPU time and each
    running job's tree are read once `window` seconds before it, so busy cores and every job's
    cores figures are there instead of blanks."""
    sampler = CpuSampler()
    usage = UsageTracker()
    ledger_jobs(store, usage=usage)
    sampler.prime(window)
    return take_snapshot(config, store, sampler, usage=usage, peers=peers)
