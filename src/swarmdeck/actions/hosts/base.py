"""Where a job can run, behind one small interface, so dispatch and the app never care how.

A host is this machine (local.py), a peer reached over ssh (ssh.py), or a cluster (slurm.py);
each answers `fits`, `submit`, `follow`, `stop` and `fetch` the same way (`Host`). Every
method is synchronous and raises only `HostError` (with its exit code) for a failure a person
must see; nothing here falls back to another host by itself: choosing another host is
dispatch's decision, made before `submit`, never after a failure. This module is a leaf:
dataclasses and the abstract base, no imports of the implementations.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from swarmdeck.errors import SwarmdeckError
from swarmdeck.exitcodes import ExitCode


class HostError(SwarmdeckError):
    """A host that cannot do what was asked; the message is one line, the code the contract's
    (78 refused before running, 241 never fits there, 251 usage)."""

    exit_code = ExitCode.REFUSED


@dataclass(frozen=True)
class JobSpec:
    """One job as every host receives it: what to run, where from, and what it needs."""

    argv: tuple[str, ...]
    """The command; passed on as words, never through a shell of this side."""
    cwd: Path
    """The tree the job runs in here; a remote host gets a copy of it."""
    label: str
    """The name shown in the Jobs panel; any text (it is quoted wherever it travels)."""
    booking: int
    """Bytes of memory the job is expected to hold at its peak (from the peak table)."""
    cap: int
    """Bytes the job may never exceed (its cage), at least `booking`; 0 = the host's own
    runner decides from its history there."""
    threads: int | None = None
    """Threads it declared, if any."""
    gpu: bool = False
    """Whether it needs a GPU."""
    estimate_wall: float | None = None
    """Seconds it is expected to run, from the caller or its history; None when unknown."""
    fetch: tuple[str, ...] = ()
    """Paths relative to the job's tree to bring back here when it ends (remote hosts)."""
    untracked: bool = False
    """Also copy files git does not track but does not ignore (remote hosts)."""
    fingerprint: str = ""
    """The workload's fingerprint (actions/fingerprint.py), so its peak is remembered."""
    declared_cap: str = ""
    """The `--cap` as the person gave it ("8G", "70%"); "" when none was."""


@dataclass(frozen=True)
class Fit:
    """A host's answer to "could this job run here?"."""

    host: str
    now: bool
    """It would be admitted at once."""
    ever: bool
    """It could be admitted at all (its booking is within the host's whole slice or cap)."""
    room: int | None = None
    """Bytes of memory room there now; None when not known."""
    cores_free: int | None = None
    """Threads free for heavy work there now; None when not known."""
    gpus_free: int | None = None
    """GPUs with no foreign process there now; None when not known."""
    reason: str = ""
    """One line saying why not (empty when `now`), or why the figures are unknown."""
    unread: bool = False
    """Its figures could not be read now: `ever` is then unknown, not no (it may fit later)."""

    @property
    def may_ever(self) -> bool:
        """It can fit, or it was not read and so might: only hosts for which this is false
        make a job one that no host can ever fit."""
        return self.ever or self.unread


@dataclass(frozen=True)
class Handle:
    """A job started on a host: enough to follow, stop, fetch from and clean up after it,
    also from another process after the driver died (everything here is in the ledger row)."""

    host: str
    job_id: int
    """This host's ledger row for the job (host = the host's name)."""
    remote_id: str
    """The host's own identity of the job: "PID:START_TICKS" on a peer, the job id in Slurm."""
    run_dir: str = ""
    """Where the job runs there (a peer's RUNROOT/LABEL-ID); empty when it runs in place."""
    extra: dict[str, str] = field(default_factory=dict)
    """Anything else a backend needs to find the job again (output file, cluster name)."""


@dataclass(frozen=True)
class Ended:
    """How a job ended, as the contract's exit code (the command's own, or 250–254 as is)."""

    exit_code: int
    outcome: str
    """One short phrase for the ledger: "ok", "exit 7", "stopped: got SIGTERM"."""
    peak: int | None = None
    """The run's working-set peak where the host's own runner measured it; None: unknown."""
    cap: int | None = None
    hit_ceiling: bool = False
    duration: float | None = None


class Host(ABC):
    """One place jobs can run. Implementations hold their connection, if any, until `close`.

    - `fits(job)`: could the job start there now, and could it ever (a `Fit`);
    - `submit(job)`: start it there, returning a `Handle` once it has really started;
    - `follow(handle, out)`: stream its output to `out` until it ends, and say how (`Ended`);
    - `stop(handle, signum)`: stop its whole tree there, by the identity recorded at submit;
    - `fetch(handle, paths, into)`: copy named files it wrote back here.
    """

    name: str
    """The host's name as config and the ledger know it."""
    kind: str
    """"local", "ssh" or "slurm"."""

    @abstractmethod
    def fits(self, job: JobSpec) -> Fit:
        """Whether `job` could start here now and ever, from figures no older than the host's
        refresh; never starts anything and never raises for a host that cannot be read (that is
        a Fit with now = ever = False and the reason)."""

    @abstractmethod
    def submit(self, job: JobSpec) -> Handle:
        """Start `job` here and return once it has started (its identity recorded in this
        host's ledger row), or raise HostError with nothing left running. The host's own
        admission still applies: a job submitted to a full host queues there."""

    @abstractmethod
    def follow(self, handle: Handle, out: Callable[[bytes], None]) -> Ended:
        """Pass the job's output to `out` as it comes, until the job ends; then say how.

        Survives a lost connection by reconnecting (the job goes on without its driver);
        raises HostError only when the job can no longer be found at all.
        """

    @abstractmethod
    def stop(self, handle: Handle, signum: int) -> None:
        """Stop the job's whole tree with `signum` (then KILL after the grace period), only if
        the recorded identity still matches (a reused pid is never signalled). Returns once the
        tree is gone; stopping a job that already ended is not an error."""

    @abstractmethod
    def fetch(self, handle: Handle, paths: tuple[str, ...], into: Path) -> list[Path]:
        """Copy each of `paths` (relative to the job's tree) from the job's run directory into
        `into`, keeping the relative layout; returns what arrived. A path that does not exist
        there is reported (one line) and skipped; a path that leaves the run directory (absolute,
        or through "..") is refused with HostError."""

    def clean(self, handle: Handle) -> None:  # noqa: B027 (local and Slurm jobs leave no copy)
        """Remove what the job left on the host (its run directory) and read back that it is
        gone; raises HostError when it is still there. Nothing to do for a job run in place."""

    def close(self) -> None:  # noqa: B027 (a host without a connection has nothing to close)
        """Let go of the connection, if the host holds one."""
