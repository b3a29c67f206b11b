"""How much of a machine a job's process tree really computes on, over a window of time.

Two numbers, because either alone misleads. "Cores in use" (Δ CPU seconds ÷ Δ wall seconds)
drops when a job is starved or throttled; "threads computing at once" (Σ per-thread Δ CPU ÷
the largest per-thread Δ CPU: N equally busy threads give N) stays at N then, and drops only
when the job itself has gone serial. A job declared with 8 threads that reads 1 thread at once
is wasting its booking; one that reads 8 threads on 2 cores is starved, not wasteful. A
refresh reads only what is supervised (`UsageTracker`), never every process on the host.
"""

from __future__ import annotations

import time
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from pathlib import Path

from swarmdeck.probes import procs
from swarmdeck.probes.cgroups import cage_thread_ids
from swarmdeck.probes.procs import ProcessIdentity
from swarmdeck.regular_files import read_regular

SERIAL_PREFIX = "serial right now:"
SERIAL_MARKER_MAX = 4096
"""Bytes of a serial marker read at most: one line names the reason."""


@dataclass(frozen=True)
class ThreadKey:
    """A thread as the sampler remembers it; the start ticks keep a reused tid apart."""

    tid: int
    start_ticks: int


@dataclass(frozen=True)
class TreeSample:
    """CPU time of every thread of a job at one moment (seconds on CLOCK_MONOTONIC)."""

    taken_at: float
    cpu_ns: dict[ThreadKey, int]
    nanosecond: bool


@dataclass(frozen=True)
class Usage:
    """A tree's use of the machine between two samples."""

    cores_in_use: float
    threads_at_once: float
    threads_seen: int
    wall: float
    nanosecond: bool


@dataclass(frozen=True)
class Supervised:
    """A running job as the sampler follows it: its root process, and its cage when it has one.

    A caged job's threads are the ones its cgroup lists; a job without a cage (or whose cage
    is gone) is followed from its root.
    """

    root: ProcessIdentity
    cage: Path | str | None = None


def process_tree(root: ProcessIdentity) -> list[int]:
    """The root and every descendant, found by one pass over the whole process table; empty if
    the root is gone. Only for a kernel without `children` files: see TreeFollower."""
    if not root.is_alive():
        return []
    children: dict[int, list[int]] = {}
    for stat in procs.process_table().values():
        children.setdefault(stat.ppid, []).append(stat.pid)
    tree, todo = [], [root.pid]
    while todo:
        pid = todo.pop()
        tree.append(pid)
        todo.extend(children.get(pid, []))
    return tree


class TreeFollower:
    """A job outside any cage, followed from its root without walking all of /proc.

    The tree is read from the root down through each thread's `children` file and kept. It is
    read again only when a member is gone (or its pid reused) or a member may be new: the
    host's fork counter moved since the last reading. A kernel without `children` files falls
    back to `process_tree`, the one full walk.
    """

    def __init__(self, root: ProcessIdentity) -> None:
        self.root = root
        self._members: list[ProcessIdentity] = []
        self._forks: int | None = None

    def pids(self, forks: int | None) -> list[int]:
        """The tree's pids now; `forks` is procs.fork_count() read once for every follower."""
        fresh = forks is not None and forks == self._forks
        if fresh and self._members and all(member.is_alive() for member in self._members):
            return [member.pid for member in self._members]
        self._forks = forks
        self._members = self._read_tree()
        return [member.pid for member in self._members]

    def _read_tree(self) -> list[ProcessIdentity]:
        if not self.root.is_alive():
            return []
        members, todo = [], [self.root]
        while todo:
            member = todo.pop()
            members.append(member)
            children = procs.children_of(member.pid)
            if children is None:
                return self._walked_tree()
            todo += [child for pid in children if (child := procs.identity(pid)) is not None]
        return members

    def _walked_tree(self) -> list[ProcessIdentity]:
        return [ident for pid in process_tree(self.root) if (ident := procs.identity(pid))]


def sample_threads(tids: list[int] | tuple[int, ...]) -> TreeSample:
    """Per-thread CPU time of the given threads, now."""
    cpu: dict[ThreadKey, int] = {}
    nanosecond = True
    for tid in tids:
        reading = procs.thread_cpu(tid)
        if reading is not None:
            ticks, ns, precise = reading
            cpu[ThreadKey(tid, ticks)] = ns
            nanosecond = nanosecond and precise
    return TreeSample(time.monotonic(), cpu, nanosecond)


def cage_threads(cage: Path | str) -> list[int] | None:
    """The threads a cage lists now; None when the cage is gone."""
    tids = cage_thread_ids(cage)
    return None if tids is None else list(tids)


def sample_tree(root: ProcessIdentity) -> TreeSample:
    """Per-thread CPU time of the whole tree under `root`, now (followed afresh)."""
    tree = TreeFollower(root).pids(None)
    return sample_threads([tid for pid in tree for tid in procs.thread_ids(pid)])


def usage_between(first: TreeSample, second: TreeSample) -> Usage:
    """Cores in use and threads computing at once between two samples of one tree.

    A thread born inside the window counts with all its CPU time; one that ended inside it
    is missing from the second sample and its last slice is lost (the honest lower bound).
    """
    wall = second.taken_at - first.taken_at
    deltas = [ns - first.cpu_ns.get(key, 0) for key, ns in second.cpu_ns.items()]
    deltas = [d for d in deltas if d > 0]
    total = sum(deltas)
    largest = max(deltas, default=0)
    return Usage(
        cores_in_use=total / 1e9 / wall if wall > 0 else 0.0,
        threads_at_once=total / largest if largest else 0.0,
        threads_seen=len(second.cpu_ns),
        wall=wall,
        nanosecond=first.nanosecond and second.nanosecond,
    )


def measure(root: ProcessIdentity, window: float = 1.0) -> Usage:
    """Sample the tree, wait `window` seconds, sample again: the tree's use over that window."""
    first = sample_tree(root)
    time.sleep(window)
    return usage_between(first, sample_tree(root))


class UsageTracker:
    """Each job's previous sample, so every snapshot gets the use since the one before without
    sleeping in between (the first sight of a job has no figure yet).

    A refresh costs what is supervised: a caged job's threads come from its cgroup's lists, a
    job without a cage from its TreeFollower; nothing walks all of /proc.
    """

    def __init__(self) -> None:
        self._last: dict[Hashable, tuple[Supervised, TreeSample]] = {}
        self._followers: dict[Hashable, TreeFollower] = {}

    def update(self, jobs: Mapping[Hashable, Supervised]) -> dict[Hashable, Usage | None]:
        """Sample every job now; forget jobs no longer asked about."""
        figures: dict[Hashable, Usage | None] = {}
        seen: dict[Hashable, tuple[Supervised, TreeSample]] = {}
        followers: dict[Hashable, TreeFollower] = {}
        forks: int | None = None
        forks_read = False
        for key, job in jobs.items():
            tids = cage_threads(job.cage) if job.cage is not None else None
            if tids is None:
                follower = self._followers.get(key)
                if follower is None or follower.root != job.root:
                    follower = TreeFollower(job.root)
                followers[key] = follower
                if not forks_read:
                    forks, forks_read = procs.fork_count(), True
                tids = [tid for pid in follower.pids(forks) for tid in procs.thread_ids(pid)]
            sample = sample_threads(tids)
            previous = self._last.get(key)
            same_job = previous is not None and previous[0] == job
            figures[key] = usage_between(previous[1], sample) if same_job else None
            seen[key] = (job, sample)
        self._last = seen
        self._followers = followers
        return figures


def cores_text(usage: Usage | None, declared_threads: int | None, serial: str | None) -> str:
    """The cores cell of a job row: "1.9 cores · 3.8/4 thr" (threads at once of those declared),
    led by "serial: REASON" while the job says it is serial on purpose; "…" before a figure."""
    if usage is None:
        text = "…"
    else:
        threads = f"{usage.threads_at_once:.1f}"
        if declared_threads:
            threads += f"/{declared_threads}"
        text = f"{usage.cores_in_use:.1f} cores · {threads} thr"
    return f"serial: {serial} · {text}" if serial else text


def serial_reason(marker: Path | str | None) -> str | None:
    """The reason a job gave for an intentionally serial phase, or None.

    A job marks such a phase by writing "serial right now: REASON" into the file named in its
    ledger row (and removing it, or writing anything else, when the phase ends). The file is
    the job's to write, so it is read only as a regular file of at most SERIAL_MARKER_MAX
    bytes, without blocking: a FIFO or a device put in its place gives no reason, never a
    refresh that waits.
    """
    if not marker:
        return None
    try:
        text = read_regular(marker, SERIAL_MARKER_MAX).decode(errors="replace")
    except OSError:
        return None
    first = text.strip().splitlines()[0] if text.strip() else ""
    if not first.lower().startswith(SERIAL_PREFIX):
        return None
    return first[len(SERIAL_PREFIX) :].strip() or "no reason given"
