"""The cage's leaf: Cage, Backend and the cgroup writes every backend shares.

Nothing here imports a backend, so v1, v2 and scope can import this module without a circle.
Backends are tried in the order delegated cgroup v2, writable cgroup v1 memory, `systemd-run
--scope`. When none works the job is refused with exit 251 and one line saying why; a job is
never run uncapped. The process joins its cage between fork and exec, so nothing it allocates is
ever charged outside the cage.
"""

from __future__ import annotations

import abc
import errno
import os
import time
from typing import TYPE_CHECKING

from swarmdeck.actions.oom import OomEvidence
from swarmdeck.errors import SwarmdeckError
from swarmdeck.exitcodes import ExitCode
from swarmdeck.probes.cgroups import (
    MemoryReading,
    SliceSite,
    cgroup_pids,
    read_memory,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

JOB_PREFIX = "job-"
RMDIR_TRIES = 50
RMDIR_PAUSE = 0.02


class CageError(SwarmdeckError):
    """The cage could not be set up: exit 251, and the command is not run."""

    exit_code = ExitCode.USAGE


def cage_name(job_id: int, runner_pid: int) -> str:
    """The name of a job's cage as its runner makes it (the scope backend's unit adds a
    `swarmdeck-` before and `.scope` after)."""
    return f"{JOB_PREFIX}{job_id}-{runner_pid}"


def made_cage(cgroup: str, slice_path: str, job_id: int, runner_pid: int) -> bool:
    """Whether a ledger row's cgroup is the cage its runner made: right inside the slice,
    named for that job and that runner, written without a `..` or a doubled slash."""
    name = cage_name(job_id, runner_pid)
    return (
        os.path.normpath(cgroup) == cgroup
        and os.path.dirname(cgroup) == os.path.normpath(slice_path)
        and os.path.basename(cgroup) in (name, f"swarmdeck-{name}.scope")
    )


def write_value(path: str, value: int | str) -> None:
    """Write one value to a cgroup file, turning the kernel's refusal into a CageError."""
    try:
        with open(path, "w") as file:
            file.write(str(value))
    except OSError as error:
        raise CageError(f"cannot write {value} to {path}: {error.strerror or error}") from error


def remove_cgroup(path: str) -> None:
    """rmdir a cgroup, waiting briefly for exiting processes to leave it."""
    for _ in range(RMDIR_TRIES):
        try:
            os.rmdir(path)
            return
        except FileNotFoundError:
            return
        except OSError as error:
            if error.errno != errno.EBUSY:
                raise CageError(f"cannot remove cage {path}: {error.strerror}") from error
        time.sleep(RMDIR_PAUSE)
    raise CageError(f"cannot remove cage {path}: processes are still in it")


def join_cgroup(procs_file: str) -> None:
    """Move the calling process into a cgroup; meant for the child between fork and exec."""
    fd = os.open(procs_file, os.O_WRONLY)
    try:
        os.write(fd, str(os.getpid()).encode())
    finally:
        os.close(fd)


class Cage(abc.ABC):
    """One job's cgroup: how to enter it, read it, and what its OOM signals say."""

    def __init__(self, path: str, cap: int) -> None:
        self.path = path
        self.cap = cap

    def command(self, argv: Sequence[str]) -> list[str]:
        """The argv to exec; backends that need a launcher wrap it here."""
        return list(argv)

    def join(self) -> None:
        """Run in the child between fork and exec: enter the cage."""
        join_cgroup(f"{self.path}/cgroup.procs")

    def before_start(self) -> None:  # noqa: B027 (optional hook, most cages need nothing here)
        """Arm OOM notifications before the job can allocate anything."""

    def after_start(self, pid: int) -> None:  # noqa: B027 (optional hook, most need nothing)
        """Arm what can only be armed once the job's process `pid` runs (a scope exists only
        then)."""

    def wake_fds(self) -> list[int]:
        """File descriptors that become readable when an OOM notification arrives."""
        return []

    def priority_fds(self) -> list[int]:
        """Cgroup files whose poll for priority data wakes when an OOM is counted (v2)."""
        return []

    def oom_before_removal(self) -> bool:
        """Whether the job's cgroup is gone after an OOM was counted at its own or the slice's
        limit: systemd removes a scope at once, sometimes before the kill itself was read."""
        return False

    def drain(self) -> None:  # noqa: B027 (optional hook, only notified cages buffer anything)
        """Consume pending notifications so they are counted once."""

    def reading(self) -> MemoryReading | None:
        return read_memory(self.path)

    def members(self) -> list[int]:
        return cgroup_pids(self.path)

    @abc.abstractmethod
    def lost_process(self) -> bool:
        """True once the kernel's OOM killer has taken a process from this cage."""

    @abc.abstractmethod
    def evidence(self) -> OomEvidence:
        """Everything the 250-or-254 decision needs, read after the job is over."""

    def release(self) -> None:  # noqa: B027 (optional hook, only eventfd cages hold anything)
        """Give back notification handles; the cgroup itself stays."""

    @abc.abstractmethod
    def remove(self) -> None:
        """Release notifications and delete the cgroup once it is empty."""


class Backend(abc.ABC):
    """A way to build cages; one slice shared by every runner that uses it."""

    kind: str

    def __init__(self, site: SliceSite) -> None:
        assert site.path is not None
        self.site = site
        self.slice_path: str = site.path

    @abc.abstractmethod
    def prepare_slice(self, slice_cap: int) -> None:
        """Make sure the slice exists and is capped at slice_cap."""

    @abc.abstractmethod
    def create_cage(self, job_id: int, cap: int) -> Cage:
        """A capped cage for one job, inside the slice."""

    def make_slice(self) -> None:
        """Create the slice's cgroup unless it is there already."""
        try:
            os.mkdir(self.slice_path)
        except FileExistsError:
            if not os.path.isdir(self.slice_path):
                raise CageError(f"cannot create slice {self.slice_path}: File exists") from None
        except OSError as error:
            raise CageError(
                f"cannot create slice {self.slice_path}: {error.strerror or error}"
            ) from error

    def new_cage_dir(self, job_id: int, configure: Callable[[str], None]) -> str:
        """Create the job's cgroup and cap it with `configure`; nothing is left if that fails.

        A cage of the same name can only be a leftover of a runner with this pid that died: an
        empty one is removed and made afresh, one still holding processes is refused.
        """
        path = self.job_path(job_id)
        try:
            os.mkdir(path)
        except FileExistsError:
            remove_cgroup(path)
            os.mkdir(path)
        except OSError as error:
            raise CageError(f"cannot create cage {path}: {error.strerror or error}") from error
        try:
            configure(path)
        except CageError:
            remove_cgroup(path)
            raise
        return path

    def job_path(self, job_id: int) -> str:
        """The job's cgroup; the runner's pid keeps ledgers of different state folders apart."""
        return f"{self.slice_path}/{cage_name(job_id, os.getpid())}"
