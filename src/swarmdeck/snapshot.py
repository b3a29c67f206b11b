"""One snapshot of everything the control room shows: the app, `status` and hooks read the same."""

from __future__ import annotations

import contextlib
import dataclasses
import sqlite3
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from swarmdeck.actions.hosts.slurm import close_orphaned_rows
from swarmdeck.actions.reconcile import reconcile
from swarmdeck.errors import StateError
from swarmdeck.probes.claude.session_titles import keep_titles
from swarmdeck.probes.claude.sessions import SessionInfo, SessionsProbe, sessions_with_hooks
from swarmdeck.probes.gpu import GpuSnapshot, gpu_snapshot
from swarmdeck.probes.host import CpuSampler, HostSnapshot, host_snapshot, local_host_name
from swarmdeck.probes.locks import LockState, OwnedDirectory, lock_rows
from swarmdeck.probes.machine import read_meminfo
from swarmdeck.probes.memory_book import (
    RECENT_FINISHED,
    LedgerJob,
    MemoryBook,
    finished_count,
    ledger_jobs,
    memory_book,
)
from swarmdeck.probes.nvml import NOT_READ
from swarmdeck.probes.peer_cache import PeerReading
from swarmdeck.probes.peer_jobs import with_peer_figures
from swarmdeck.probes.slurm import SlurmReading, our_cluster_jobs, read_cluster
from swarmdeck.probes.store_rows import (
    Alert,
    Finding,
    KillRequest,
    open_alerts,
    open_findings,
    pending_kill_requests,
)
from swarmdeck.probes.usage import UsageTracker

if TYPE_CHECKING:
    from swarmdeck.config import Config
    from swarmdeck.probes.peer import PeerProber
    from swarmdeck.state import StateStore

SNAPSHOT_KEYS = (
    "taken_at",
    "hosts",
    "jobs",
    "jobs_truncated",
    "gpus",
    "sessions",
    "alerts",
    "locks",
    "findings",
    "kill_requests",
)
"""The snapshot JSON's top-level keys, in order: lists, but for `taken_at` and `jobs_truncated`
(true when `jobs` holds only the most recent finished jobs; `status --json --all` gives all)."""


def no_gpu_read() -> GpuSnapshot:
    """The GPU part of a snapshot that did not read the cards."""
    return GpuSnapshot(state=NOT_READ)


@dataclass
class Snapshot:
    """Typed parts for the app and `status`; `to_json` flattens them into the snapshot contract."""

    taken_at: float
    hosts: list[HostSnapshot]
    jobs: list[LedgerJob] = field(default_factory=list)
    gpus: GpuSnapshot = field(default_factory=no_gpu_read)
    """This host's cards, or why there are none; one JSON row per card (GpuSnapshot.as_rows)."""
    sessions: list[SessionInfo] = field(default_factory=list)
    alerts: list[Alert] = field(default_factory=list)
    locks: list[LockState | OwnedDirectory] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    kill_requests: list[KillRequest] = field(default_factory=list)
    books: list[MemoryBook] = field(default_factory=list)
    """Each host's memory book; its figures also go into that host's JSON object."""
    peers: list[PeerReading] = field(default_factory=list)
    """Each configured peer's reading; in the JSON they follow this host in `hosts`."""
    jobs_left_out: int = 0
    """How many finished jobs were left out of `jobs` (only the most recent are listed;
    `--all` lists every row)."""
    cluster: SlurmReading | None = None
    """The Slurm cluster's nodes and jobs when [slurm] is enabled; in the JSON its nodes follow
    the peers in `hosts` (kind "slurm-node") and its jobs follow the ledger's in `jobs`."""

    @property
    def jobs_truncated(self) -> bool:
        """Finished jobs were left out of `jobs` (the JSON's `jobs_truncated`)."""
        return self.jobs_left_out > 0

    def book_of(self, host: str) -> MemoryBook | None:
        """The memory book of this snapshot's host `host`, if it was read."""
        return next((book for book in self.books if book.host == host), None)

    def to_json(self) -> dict[str, Any]:
        """The snapshot JSON of DESIGN.md: every key present, each a list of flat objects."""
        hosts: list[dict[str, Any]] = []
        for host in self.hosts:
            out = host.to_json()
            book = self.book_of(host.name)
            if book is not None:
                out.update(book.host_fields())
            out.setdefault("state", "read")
            hosts.append(out)
        hosts += [peer.to_json() for peer in self.peers]
        jobs = [job.to_json() for job in self.jobs]
        if self.cluster is not None:
            hosts += self.cluster.hosts_json()
            jobs += self.cluster.jobs_json()
        return {
            "taken_at": self.taken_at,
            "hosts": hosts,
            "jobs": jobs,
            "jobs_truncated": self.jobs_truncated,
            "gpus": [row.to_json() for row in self.gpus.as_rows()],
            "sessions": [session.to_json() for session in self.sessions],
            "alerts": [dataclasses.asdict(alert) for alert in self.alerts],
            "locks": [lock.to_json() for lock in self.locks],
            "findings": [dataclasses.asdict(finding) for finding in self.findings],
            "kill_requests": [dataclasses.asdict(request) for request in self.kill_requests],
        }


def take_snapshot(
    config: Config,
    store: StateStore,
    sampler: CpuSampler | None = None,
    sessions: SessionsProbe | None = None,
    usage: UsageTracker | None = None,
    peers: PeerProber | None = None,
    all_jobs: bool = False,
    *,
    runners: bool = True,
) -> Snapshot:
    """Probe this host and read the store once; with `peers`, read every configured peer too.

    `sessions` is a SessionsProbe kept between snapshots (the app's), so each snapshot reads
    only what Claude Code appended since the last; without one the transcripts are read afresh.
    `usage` is a UsageTracker kept the same way: running jobs get their cores in use and
    threads at once since the previous snapshot (none on a tracker's first sight of a job).

    It only reads: a job whose runner died is shown as it stands in the ledger, with
    `stale: true`. Readers a person watches take `reconciled_snapshot` instead, which has just
    checked every runner and so passes `runners=False` (each runner's stat is read once).
    """
    cluster = read_slurm(config, store) if config.slurm.enabled else None
    # One read for every part the state file gives: a consistent view, and one transaction's
    # statements instead of one set per part.
    with store.read():
        # One reading of the kernel's meminfo for the host's memory, the slice's cap and the
        # book, so their figures agree; read before the jobs' cages, a job that ends between
        # the two readings leaves the book short of room, never showing room twice.
        meminfo = read_meminfo()
        host = host_snapshot(config, store, sampler, meminfo)
        finished = None if all_jobs else RECENT_FINISHED
        jobs = list(ledger_jobs(store, host.name, usage, finished, runners=runners))
        snapshot = Snapshot(
            taken_at=time.time(),
            hosts=[host],
            jobs_left_out=0 if all_jobs else max(
                0, finished_count(store, host.name) - RECENT_FINISHED
            ),
            jobs=jobs + [job for peer in config.hosts for job in ledger_jobs(store, peer.name)],
            books=[memory_book(config, store, host.name, jobs, meminfo)],
            gpus=gpu_snapshot(config.gpu.allowlist),
            sessions=sessions_with_hooks(sessions or SessionsProbe(), store),
            locks=lock_rows(config.locks.work_root),
            alerts=open_alerts(store),
            findings=open_findings(store),
            kill_requests=pending_kill_requests(store),
            cluster=cluster,
        )
    snapshot.peers = peers.read_all(config) if peers is not None else []
    snapshot.jobs = with_peer_figures(snapshot.jobs, snapshot.peers)
    return snapshot


def read_slurm(config: Config, store: StateStore) -> SlurmReading:
    """The cluster's reading, after closing the rows of cluster jobs whose runner died."""
    close_orphaned_rows(store)
    return read_cluster(config.slurm, our_cluster_jobs(store))


def reconciled_snapshot(config: Config, store: StateStore, *args: Any, **kwargs: Any) -> Snapshot:
    """`take_snapshot` between the writes the app and `status` make: first, ledger rows whose
    runner died are closed as lost (and what they left in their cages stopped), so neither
    shows a dead job as running; after, the title of each live Claude Code session is kept,
    so it is still shown once the session ended. `swarmdeck probe --json` does neither: a
    peer's probe only reads."""
    reconcile(store, local_host_name(), config.memory.slice)
    snapshot = take_snapshot(config, store, *args, runners=False, **kwargs)
    keep_session_titles(store, snapshot.sessions)
    return snapshot


def keep_session_titles(store: StateStore, sessions: list[SessionInfo]) -> None:
    """Keep the live sessions' titles (session_titles.py); a store that cannot take the write
    now leaves them for the next snapshot."""
    # Safe to skip: the session is still live, so the next snapshot keeps its title; this one
    # is whole without the write.
    with contextlib.suppress(sqlite3.Error, StateError):
        keep_titles(store, {s.session_id: s.title for s in sessions if s.live and s.title})


def one_shot_snapshot(
    config: Config,
    store: StateStore,
    window: float = 0.2,
    peers: PeerProber | None = None,
    *,
    reconciled: bool = False,
    all_jobs: bool = False,
) -> Snapshot:
    """A snapshot for a caller that takes only one (`status`, `probe`): CPU time and each
    running job's tree are read once `window` seconds before it, so busy cores and every job's
    cores figures are there instead of blanks. `reconciled` closes dead runners' rows first
    (`reconciled_snapshot`); without it nothing is written."""
    sampler = CpuSampler()
    usage = UsageTracker()
    ledger_jobs(store, usage=usage)
    sampler.prime(window)
    take = reconciled_snapshot if reconciled else take_snapshot
    return take(config, store, sampler, usage=usage, peers=peers, all_jobs=all_jobs)
