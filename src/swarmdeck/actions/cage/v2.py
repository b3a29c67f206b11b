"""Cages on a delegated cgroup v2 subtree: memory.max, no swap, whole-job OOM kills.

v2 keeps per-cgroup counts in memory.events.local: `oom` rises on the cgroup whose limit was
hit, so the job's own count against the slice's own count tells own cap from slice full without
any notification plumbing. memory.oom.group=1 makes the kernel take the whole job at once.

A cage remembers what its files said each time it read them: a systemd scope's cgroup is
removed as soon as its last process is gone, often before the runner reads why it went. The
kernel wakes a poll for priority data on memory.events when a count changes, so the runner
reads them the moment an OOM is counted; when the cgroup vanished before the kill itself was
read, an OOM counted at the job's or the slice's limit during the run says why.
"""

from __future__ import annotations

import os

from swarmdeck.actions.cage.base import Backend, Cage, remove_cgroup, write_value
from swarmdeck.actions.oom import OomEvidence, reached
from swarmdeck.probes.cgroups import parse_flat_keyed, read_int, read_keyed


def v2_evidence(
    job_events: dict[str, int],
    job_events_local: dict[str, int],
    slice_local_before: dict[str, int],
    slice_local_after: dict[str, int],
    job_peak: int | None,
    job_cap: int,
    cgroup_gone: bool = False,
    slice_tree_before: dict[str, int] | None = None,
    slice_tree_after: dict[str, int] | None = None,
) -> OomEvidence:
    """The OOM evidence of one run from memory.events files read before and after it.

    The job's files start at zero (its cgroup is new); the slice's are shared by every job, so
    only what rose during this run counts. A job whose cgroup vanished before its kill was read
    lost its process to the OOM killer when an OOM was counted at its own or the slice's limit
    during the run, or its high-water mark reached its cap (the caller asks only of a job that
    SIGKILL ended). When no kill was among the job's own counts read before it vanished (systemd
    removes an emptied scope at once, and a removed cgroup's files cannot be read), the slice's
    hierarchical memory.events (`slice_tree_*`) tells an OOM below the slice's own limit: the
    SIGKILLed job's at its own cap.
    """

    def rose(key: str) -> int:
        return max(0, slice_local_after.get(key, 0) - slice_local_before.get(key, 0))

    killed = job_events.get("oom_kill", 0) + job_events.get("oom_group_kill", 0) > 0
    own_cap_ooms, slice_ooms = job_events_local.get("oom", 0), rose("oom")
    if cgroup_gone and not killed and not own_cap_ooms and slice_tree_before is not None:
        after = slice_tree_after or {}
        own_cap_ooms = max(0, after.get("oom", 0) - slice_tree_before.get("oom", 0) - slice_ooms)
    at_cap = reached(job_peak, job_cap) or job_events_local.get("max", 0) > 0
    return OomEvidence(
        job_lost_process=killed or (cgroup_gone and (own_cap_ooms or slice_ooms or at_cap) > 0),
        own_cap_ooms=own_cap_ooms,
        slice_ooms=slice_ooms,
        job_at_cap=at_cap,
        slice_at_cap=rose("max") > 0,
    )


def open_counts(path: str) -> int | None:
    try:
        return os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None


def read_counts(fd: int | None, path: str) -> dict[str, int]:
    """A flat-keyed counts file, through its descriptor when one is open; {} once it is gone."""
    if fd is None:
        return read_keyed(path)
    try:
        return parse_flat_keyed(os.pread(fd, 4096, 0).decode())
    except OSError:
        return {}


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
        self._slice_tree_before: dict[str, int] = {}
        self._events: dict[str, int] = {}
        self._events_local: dict[str, int] = {}
        self._peak: int | None = None
        self._events_fd: int | None = None
        self._local_fd: int | None = None

    def before_start(self) -> None:
        self._slice_before = read_keyed(f"{self.slice_path}/memory.events.local")
        self._slice_tree_before = read_keyed(f"{self.slice_path}/memory.events")
        self._events_fd = open_counts(f"{self.path}/memory.events")
        self._local_fd = open_counts(f"{self.path}/memory.events.local")
        self._remember()

    def priority_fds(self) -> list[int]:
        return [] if self._events_fd is None else [self._events_fd]

    def drain(self) -> None:
        self._remember()

    def _remember(self) -> None:
        """Read the job's counts while its cgroup is there; keep the last ones once it is gone.

        Both event files are read through descriptors opened before the job started, one right
        after the other, so the last reading is of one moment. Reading memory.events through
        the descriptor the runner polls is what settles the kernel's notification.
        """
        events = read_counts(self._events_fd, f"{self.path}/memory.events")
        if events:
            self._events = events
        local = read_counts(self._local_fd, f"{self.path}/memory.events.local")
        if local:
            self._events_local = local
        peak = read_int(f"{self.path}/memory.peak")
        if peak is not None:
            self._peak = peak

    def lost_process(self) -> bool:
        self._remember()
        return self._events.get("oom_kill", 0) + self._events.get("oom_group_kill", 0) > 0

    def oom_before_removal(self) -> bool:
        return not os.path.isdir(self.path) and self.evidence().job_lost_process

    def evidence(self) -> OomEvidence:
        self._remember()
        return v2_evidence(
            job_events=self._events,
            job_events_local=self._events_local,
            slice_local_before=self._slice_before,
            slice_local_after=read_keyed(f"{self.slice_path}/memory.events.local"),
            job_peak=self._peak,
            job_cap=self.cap,
            cgroup_gone=not os.path.isdir(self.path),
            slice_tree_before=self._slice_tree_before,
            slice_tree_after=read_keyed(f"{self.slice_path}/memory.events"),
        )

    def release(self) -> None:
        for fd in (self._events_fd, self._local_fd):
            if fd is not None:
                os.close(fd)
        self._events_fd = self._local_fd = None

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
        enable_memory(os.path.dirname(self.slice_path))
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
