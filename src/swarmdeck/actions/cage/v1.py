"""Cages on a writable cgroup v1 memory hierarchy: limits, high-water marks, OOM eventfds.

On v1 the oom_kill counter lands on the victim's cgroup whether the job hit its own cap or the
slice was full, so each cage registers an eventfd on its own memory.oom_control and one on the
slice's: an own-cap OOM notifies only the job's, a slice OOM notifies the slice's and every
descendant's (measured on these machines).
"""

from __future__ import annotations

import os

from swarmdeck.actions.cage.base import Backend, Cage, CageError, remove_cgroup, write_value
from swarmdeck.actions.oom import OomEvidence, reached, v1_own_cap_ooms
from swarmdeck.probes.cgroups import read_int, read_keyed
from swarmdeck.probes.procs import own_thread_count, read_meminfo


def swap_exists() -> bool:
    """Whether memsw limits are needed to keep a cage from spilling into swap."""
    try:
        return read_meminfo().get("SwapTotal", 0) > 0
    except (OSError, ValueError):
        return False


def set_limit(cgroup: str, limit: int) -> None:
    """Cap a v1 cgroup, memsw too where swap exists.

    memsw must never be below the memory limit, so it is raised first and lowered last.
    """
    memsw = f"{cgroup}/memory.memsw.limit_in_bytes"
    with_memsw = os.path.exists(memsw) and swap_exists()
    current = read_int(f"{cgroup}/memory.limit_in_bytes")
    raising = current is None or limit >= current
    if with_memsw and raising:
        write_value(memsw, limit)
    write_value(f"{cgroup}/memory.limit_in_bytes", limit)
    if with_memsw and not raising:
        write_value(memsw, limit)


class OomNotifier:
    """An eventfd registered on one cgroup's memory.oom_control; counts notifications."""

    def __init__(self, cgroup: str) -> None:
        self.count = 0
        self.efd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
        control = os.open(f"{cgroup}/memory.oom_control", os.O_RDONLY | os.O_CLOEXEC)
        try:
            write_value(f"{cgroup}/cgroup.event_control", f"{self.efd} {control}")
        except CageError:
            os.close(self.efd)
            raise
        finally:
            os.close(control)

    def drain(self) -> int:
        try:
            arrived = os.eventfd_read(self.efd)
        except BlockingIOError:
            arrived = 0  # nothing since the last read
        self.count += arrived
        return self.count

    def close(self) -> None:
        # Closing the eventfd is what unregisters it from the cgroup.
        os.close(self.efd)


class V1Cage(Cage):
    """One job's v1 memory cgroup under the slice."""

    def __init__(self, path: str, cap: int, slice_path: str) -> None:
        super().__init__(path, cap)
        self.slice_path = slice_path
        self._job: OomNotifier | None = None
        self._slice: OomNotifier | None = None
        self._slice_failcnt = 0
        self._slice_peak: int | None = None

    def before_start(self) -> None:
        self._job = OomNotifier(self.path)
        self._slice = OomNotifier(self.slice_path)
        self._slice_failcnt = read_int(f"{self.slice_path}/memory.failcnt") or 0
        self._slice_peak = read_int(f"{self.slice_path}/memory.max_usage_in_bytes")

    def join(self) -> None:
        """Enter the cage by moving this one thread, when it is the process's only thread.

        Moving a whole process (`cgroup.procs`) takes the kernel's global threadgroup lock for
        writing, which waits out an RCU grace period: the largest single cost of a job's start.
        Moving the calling thread alone (`0` into `tasks`) skips that lock, and between fork and
        exec the child has exactly one thread, so the whole process is in the cage all the
        same. A caller with more threads moves whole, the slow way.
        """
        if own_thread_count() > 1:
            super().join()
            return
        fd = os.open(f"{self.path}/tasks", os.O_WRONLY)
        try:
            os.write(fd, b"0")
        finally:
            os.close(fd)

    def wake_fds(self) -> list[int]:
        return [n.efd for n in (self._job, self._slice) if n is not None]

    def drain(self) -> None:
        for notifier in (self._job, self._slice):
            if notifier is not None:
                notifier.drain()

    def lost_process(self) -> bool:
        control = read_keyed(f"{self.path}/memory.oom_control")
        if "oom_kill" in control:
            return control["oom_kill"] > 0
        # Kernels before 5.7 have no counter: an own notification is the best sign left.
        self.drain()
        return self._job is not None and self._job.count > 0

    def evidence(self) -> OomEvidence:
        self.drain()
        job_n = self._job.count if self._job else 0
        slice_n = self._slice.count if self._slice else 0
        slice_limit = read_int(f"{self.slice_path}/memory.limit_in_bytes")
        slice_peak = read_int(f"{self.slice_path}/memory.max_usage_in_bytes")
        slice_grew_to_cap = (
            slice_peak is not None
            and slice_peak != self._slice_peak
            and reached(slice_peak, slice_limit)
        )
        failcnt = read_int(f"{self.slice_path}/memory.failcnt") or 0
        return OomEvidence(
            job_lost_process=self.lost_process(),
            own_cap_ooms=v1_own_cap_ooms(job_n, slice_n),
            slice_ooms=slice_n,
            job_at_cap=reached(read_int(f"{self.path}/memory.max_usage_in_bytes"), self.cap),
            slice_at_cap=slice_grew_to_cap or failcnt > self._slice_failcnt,
        )

    def release(self) -> None:
        for notifier in (self._job, self._slice):
            if notifier is not None:
                notifier.close()
        self._job = self._slice = None

    def remove(self) -> None:
        self.release()
        remove_cgroup(self.path)


class V1Backend(Backend):
    """A slice directory in the v1 memory hierarchy; jobs are its subdirectories."""

    kind = "cgroup-v1"

    def prepare_slice(self, slice_cap: int) -> None:
        self.make_slice()
        if read_int(f"{self.slice_path}/memory.limit_in_bytes") != slice_cap:
            set_limit(self.slice_path, slice_cap)

    def create_cage(self, job_id: int, cap: int) -> Cage:
        path = self.new_cage_dir(job_id, lambda cgroup: set_limit(cgroup, cap))
        return V1Cage(path, cap, self.slice_path)
