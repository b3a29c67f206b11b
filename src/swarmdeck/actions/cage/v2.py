"""Cages on a delegated cgroup v2 subtree: memory.max, no swap, whole-job OOM kills.

v2 keeps per-cgroup counts in memory.events.local: `oom` rises on the cgroup whose limit was
hit, so the job's own count against the slice's own count tells own cap from slice full without
any notification plumbing. memory.oom.group=1 makes the kernel take the whole job at once.

A cage remembers what its files said each time it read them: a systemd scope's cgroup is
removed as soon as its last process is gone, often before the runner reads why it went. The
kernel wakes a poll for priority data on memory.events when a count changes, so the runner
reads them the moment an OOM is counted, while the cgroup is still there.
"""

from __future__ import annotations

import os

from swarmdeck.actions.cage.base import Backend, Cage, remove_cgroup, write_value
from swarmdeck.actions.oom import OomEvidence, reached
from swarmdeck.probes.cgroups import parse_flat_keyed, read_int, read_keyed
from swarmdeck.text_paths import parent_of


def v2_evidence(
    job_events: dict[str, int],
    job_events_local: dict[str, int],
    slice_local_before: dict[str, int],
    slice_local_after: dict[str, int],
    job_peak: int | None,
    job_cap: int,
) -> OomEvidence:
    """The OOM evidence of one run from memory.events files read before and after it.

    The job's files start at zero (its cgroup is new); the slice's are shared by every job, so
    only what rose during this run counts.
    """

    def rose(key: str) -> int:
        return max(0, slice_local_after.get(key, 0) - slice_local_before.get(key, 0))

    return OomEvidence(
        job_lost_process=job_events.get("oom_kill", 0) + job_events.get("oom_group_kill", 0) > 0,
        own_cap_ooms=job_events_local.get("oom", 0),
        slice_ooms=rose("oom"),
        job_at_cap=reached(job_peak, job_cap) or job_events_local.get("max", 0) > 0,
        slice_at_cap=rose("max") > 0,
    )


def enable_memory(cgroup: str) -> None:
    """Pass the memory controller on to a cgroup's children."""
    control = f"{cgroup}/cgroup.subtree_control"
    with open(control) as file:
        offered = file.read().split()
    if "memory" not in offered:
        write_value(control, "+memory")


class V2Cage(Cage):
    """One job's cgroup under a v2 slice."""

    def __init__(self, path: str, cap: int, slice_path: str) -> None:
        super().__init__(path, cap)
        self.slice_path = slice_path
        self._slice_before: dict[str, int] = {}
        self._events: dict[str, int] = {}
        self._events_local: dict[str, int] = {}
        self._peak: int | None = None
        self._events_fd: int | None = None

    def before_start(self) -> None:
        self._slice_before = read_keyed(f"{self.slice_path}/memory.events.local")
        try:
            self._events_fd = os.open(f"{self.path}/memory.events", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            self._events_fd = None
        self._remember()

    def priority_fds(self) -> list[int]:
        return [] if self._events_fd is None else [self._events_fd]

    def drain(self) -> None:
        self._remember()

    def _remember(self) -> None:
        """Read the job's counts while its cgroup is there; keep the last ones once it is gone.

        memory.events is read through the descriptor the runner polls: reading it is what
        settles the kernel's notification, which would otherwise wake the poll at once again.
        """
        events: dict[str, int] = {}
        if self._events_fd is not None:
            try:
                events = parse_flat_keyed(os.pread(self._events_fd, 4096, 0).decode())
            except OSError:
                events = {}
        else:
            events = read_keyed(f"{self.path}/memory.events")
        if events:
            self._events = events
        local = read_keyed(f"{self.path}/memory.events.local")
        if local:
            self._events_local = local
        peak = read_int(f"{self.path}/memory.peak")
        if peak is not None:
            self._peak = peak

    def lost_process(self) -> bool:
        self._remember()
        return self._events.get("oom_kill", 0) + self._events.get("oom_group_kill", 0) > 0

    def evidence(self) -> OomEvidence:
        self._remember()
        return v2_evidence(
            job_events=self._events,
            job_events_local=self._events_local,
            slice_local_before=self._slice_before,
            slice_local_after=read_keyed(f"{self.slice_path}/memory.events.local"),
            job_peak=self._peak,
            job_cap=self.cap,
        )

    def release(self) -> None:
        if self._events_fd is not None:
            os.close(self._events_fd)
            self._events_fd = None

    def remove(self) -> None:
        self.release()
        remove_cgroup(self.path)


def cap_v2(cgroup: str, limit: int) -> None:
    write_value(f"{cgroup}/memory.max", limit)
    if os.path.exists(f"{cgroup}/memory.swap.max"):
        write_value(f"{cgroup}/memory.swap.max", 0)


class V2Backend(Backend):
    """A slice in a delegated v2 subtree; jobs are its child cgroups."""

    kind = "cgroup-v2"

    def prepare_slice(self, slice_cap: int) -> None:
        self.make_slice()
        enable_memory(parent_of(self.slice_path))
        if read_int(f"{self.slice_path}/memory.max") != slice_cap:
            cap_v2(self.slice_path, slice_cap)
        enable_memory(self.slice_path)

    def create_cage(self, job_id: int, cap: int) -> Cage:
        path = self.new_cage_dir(job_id, lambda cgroup: cap_whole_job(cgroup, cap))
        return V2Cage(path, cap, self.slice_path)


def cap_whole_job(cgroup: str, cap: int) -> None:
    """Cap a job's cgroup, and have the kernel's OOM killer take the whole job at once."""
    cap_v2(cgroup, cap)
    write_value(f"{cgroup}/memory.oom.group", 1)
