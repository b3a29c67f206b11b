"""A job this host runs on a peer (a peer run, a migrated job), with the figures the peer read.

Its row here has no cage to read: the peer's own runner cages it, in the peer's ledger. The
peer's snapshot (`swarmdeck probe --json`, read over SSH each refresh) lists that row with its
cage, memory and cores; it is the one whose cwd is the copy's folder, whose name (LABEL-ID-
LEDGER, actions/hosts/peer_ledger.py) is this row's alone. Its figures are put on the row here,
marked with the peer's name and when it was read, so whoever shows them can say they are the
peer's ("on box2").
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import PurePosixPath
from typing import Any

from swarmdeck.ledger.schema import RUNNING
from swarmdeck.probes.memory_book import LedgerJob
from swarmdeck.probes.peer_cache import READ, PeerReading
from swarmdeck.probes.usage import Usage


def with_peer_figures(jobs: list[LedgerJob], peers: list[PeerReading]) -> list[LedgerJob]:
    """`jobs`, each running one on a peer that was read carrying that peer's figures for it."""
    read = {peer.name: peer for peer in peers if peer.state == READ}
    return [_filled(job, read[job.host]) if job.host in read else job for job in jobs]


def _filled(job: LedgerJob, peer: PeerReading) -> LedgerJob:
    if job.state != RUNNING or not job.run_dir:
        return job
    folder = PurePosixPath(job.run_dir).name
    row = next((r for r in peer.jobs if PurePosixPath(str(r.get("cwd") or "")).name == folder),
               None)
    if row is None:
        return job
    return replace(
        job,
        cgroup=_text(row.get("cgroup")),
        current=_size(row.get("current")),
        peak=job.peak if job.peak is not None else _size(row.get("peak")),
        kernel_peak=job.kernel_peak if job.kernel_peak is not None
        else _size(row.get("kernel_peak")),
        hit_ceiling=job.hit_ceiling or row.get("hit_ceiling") is True,
        usage=_usage(row),
        serial_reason=_text(row.get("serial_reason")),
        figures_from=peer.name,
        figures_at=peer.read_at,
    )


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _size(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _usage(row: dict[str, Any]) -> Usage | None:
    """The cores figures the peer's one-shot probe took (over its short window); None when it
    sent none."""
    cores, threads = row.get("cores_in_use"), row.get("threads_at_once")
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in (cores, threads)):
        return None
    return Usage(float(cores), float(threads), round(threads), 0.0, False)
