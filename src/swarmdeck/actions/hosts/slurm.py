"""A Slurm cluster as a host: fits / submit / follow / stop / fetch, through the client commands.

Slurm is the scheduler; swarmdeck only brings its discipline: the job's memory is booked with
`sbatch --mem` from the learned peak, the engine's ending is mapped onto our exit codes
(OUT_OF_MEMORY → 250, TIMEOUT → 253, NODE_FAIL or preemption → 254, the command's own status
otherwise), and stopping a job is `scancel` of its id, never a signal to a pid on a node.
"""

from __future__ import annotations

import contextlib
import math
import select
import shlex
import signal
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from swarmdeck.errors import SwarmdeckError
from swarmdeck.exitcodes import ExitCode
from swarmdeck.probes.slurm import (
    Accounting,
    JobStatus,
    SlurmNode,
    SlurmUnavailable,
    accounting,
    job_status,
    read_nodes,
    run_client,
)

if TYPE_CHECKING:
    from swarmdeck.actions.booking import Booking
    from swarmdeck.config import SlurmConfig

MIB = 1 << 20
OWN_CAP_STATES = frozenset({"OUT_OF_MEMORY"})
TIMEOUT_STATES = frozenset({"TIMEOUT", "DEADLINE"})
NOT_ITS_FAULT_STATES = frozenset({"NODE_FAIL", "PREEMPTED", "BOOT_FAIL"})
ACCOUNTING_WAIT = 15.0
"""Seconds to wait after a job ended for slurmdbd to hold its batch step's peak."""
STOP_WAIT = 60.0
"""Seconds `stop` waits for the engine to say a cancelled job ended."""


class SlurmError(SwarmdeckError):
    """The cluster refused or failed a request before the job ran: exit 78, nothing ran."""

    exit_code = ExitCode.REFUSED


# ---- pure decisions --------------------------------------------------------------------------


def mem_argument(cap: int) -> str:
    """`--mem` in whole MiB, rounded up so the job never gets less than its cap."""
    return f"--mem={max(1, math.ceil(cap / MIB))}M"


def exit_for(state: str, exit_code: str) -> tuple[int, str]:
    """Our exit code and the ledger's outcome for a job that Slurm says ended in `state` with
    `exit_code` ("status:signal")."""
    if state in OWN_CAP_STATES:
        return int(ExitCode.OWN_CAP), "own cap"
    if state in TIMEOUT_STATES:
        return int(ExitCode.TIMED_OUT), "timed out"
    if state in NOT_ITS_FAULT_STATES:
        return int(ExitCode.SLICE_FULL), f"{state.lower()}: not its fault"
    status, _, sig = exit_code.partition(":")
    signum = int(sig) if sig.isdigit() else 0
    if signum:
        name = signal.Signals(signum).name if signum in signal.valid_signals() else str(signum)
        return 128 + signum, f"killed by {name}"
    if state == "CANCELLED":
        return 128 + signal.SIGTERM, "cancelled"
    code = int(status) if status.isdigit() else 1
    return code, "ok" if code == 0 else f"exit {code}"


@dataclass(frozen=True)
class Fit:
    """Whether a booking fits a node of the cluster: now, ever, and which node has most room."""

    now: bool
    ever: bool
    best: str
    """The usable node with the most free memory; empty when there is none."""
    largest: int
    """The most memory any usable node has in all."""


def fit_of(nodes: Sequence[SlurmNode], booked: int, threads: int) -> Fit:
    usable = [node for node in nodes if node.usable]
    ever = [n for n in usable if n.mem_total >= booked and n.cores >= threads]
    now = [n for n in ever if (n.mem_free is None or n.mem_free >= booked)
           and n.cores_idle >= threads]
    best = max(now or ever, key=lambda n: n.mem_free or 0, default=None)
    return Fit(
        now=bool(now), ever=bool(ever), best=best.name if best else "",
        largest=max((n.mem_total for n in usable), default=0),
    )


# ---- the host --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Submission:
    """What `submit` needs besides the command: who the job is to us and where it writes."""

    argv: list[str]
    cwd: Path
    label: str
    booking: Booking
    threads: int | None
    output: Path
    ledger_id: int


@dataclass(frozen=True)
class Submitted:
    """A job the cluster accepted."""

    slurm_job_id: int
    output: Path


@dataclass(frozen=True)
class Followed:
    """How following a job ended."""

    status: JobStatus
    stopped_by: int | None
    """The stop signal this process received, when that is why the job was cancelled."""
    timed_out: bool
    started_at: float | None
    node: str


class SlurmHost:
    """The cluster behind the hosts interface: fits, submit, follow, stop, fetch."""

    kind = "slurm"

    def __init__(self, config: SlurmConfig) -> None:
        self.config = config

    # fits ------------------------------------------------------------------------------------

    def nodes(self) -> list[SlurmNode]:
        try:
            return read_nodes(self.config)
        except SlurmUnavailable as error:
            raise SlurmError(f"the Slurm cluster is not read ({error}); nothing was submitted")\
                from None

    def fits(self, booked: int, threads: int = 1) -> Fit:
        return fit_of(self.nodes(), booked, threads)

    # submit ----------------------------------------------------------------------------------

    def sbatch_argv(self, job: Submission) -> list[str]:
        config = self.config
        argv = [
            "sbatch", "--parsable", f"--job-name={job.label}", mem_argument(job.booking.cap),
            f"--output={job.output}", f"--chdir={job.cwd}",
            f"--comment=swarmdeck job {job.ledger_id}",
        ]
        if job.threads:
            argv.append(f"--cpus-per-task={job.threads}")
        if config.partition:
            argv.append(f"--partition={config.partition}")
        if config.account:
            argv.append(f"--account={config.account}")
        argv += list(config.sbatch_args)
        argv.append("--wrap=exec " + shlex.join(job.argv))
        return argv

    def submit(self, job: Submission) -> Submitted:
        job.output.parent.mkdir(parents=True, exist_ok=True)
        job.output.touch()
        try:
            text = run_client(self.config, self.sbatch_argv(job), timeout=self.config.timeout * 4)
        except SlurmUnavailable as error:
            raise SlurmError(f"sbatch refused the job: {error}") from None
        first = text.strip().split(";")[0]
        if not first.isdigit():
            raise SlurmError(f"sbatch printed no job id: {text.strip()[:80]!r}")
        return Submitted(int(first), job.output)

    # follow ----------------------------------------------------------------------------------

    def follow(
        self,
        job: Submitted,
        stop_fd: int,
        stop_pending: Callable[[], int | None],
        on_start: Callable[[str, float], None],
        sink: BinaryIO | None,
        timeout: float | None = None,
    ) -> Followed:
        """Follow the job to its end, copying its output to `sink` as it grows.

        `on_start(node, started_at)` is called once, when the job is first seen running. A stop
        signal (seen on `stop_fd`) or `timeout` seconds of running cancel the job, and following
        goes on until the engine says it ended.
        """
        interval = self.config.poll_interval
        started_at: float | None = None
        node = ""
        stopped_by: int | None = None
        timed_out = False
        with open(job.output, "rb") as output:
            while True:
                status = self._status(job.slurm_job_id)
                _copy(output, sink)
                if status is not None:
                    node = status.node or node
                    if started_at is None and status.state not in ("PENDING", "") and node:
                        started_at = time.time()
                        on_start(node, started_at)
                    if status.over:
                        _copy(output, sink)
                        return Followed(status, stopped_by, timed_out, started_at, node)
                if stopped_by is None and not timed_out:
                    stopped_by = stop_pending()
                    ran_out = (timeout is not None and started_at is not None
                               and time.time() - started_at > timeout)
                    if stopped_by is not None or ran_out:
                        timed_out = stopped_by is None
                        self.cancel(job.slurm_job_id)
                        interval = min(interval, 0.25)
                # A stop signal writes to stop_fd (the wakeup fd), ending the pause at once.
                select.select([stop_fd], [], [], interval)

    def _status(self, job_id: int) -> JobStatus | None:
        """The job's status, or None while the controller does not answer (we keep asking)."""
        try:
            status = job_status(self.config, job_id)
        except SlurmUnavailable:
            return None
        return status if status.state else None

    # stop ------------------------------------------------------------------------------------

    def cancel(self, job_id: int) -> None:
        """Ask the engine to end the job (`scancel`); it ends in its own time."""
        try:
            run_client(self.config, ["scancel", str(job_id)])
        except SlurmUnavailable as error:
            raise SlurmError(f"scancel {job_id} failed: {error}") from None

    def stop(self, job_id: int, wait: float = STOP_WAIT) -> JobStatus:
        """Cancel the job and wait until the engine says it ended; returns its last status."""
        self.cancel(job_id)
        deadline = time.monotonic() + wait
        while True:
            status = self._status(job_id)
            if status is not None and status.over:
                return status
            if time.monotonic() > deadline:
                raise SlurmError(f"job {job_id} was cancelled but still not over after {wait:g} s")
            time.sleep(self.config.poll_interval)

    # fetch -----------------------------------------------------------------------------------

    def fetch(self, job: Submitted) -> list[Path]:
        """What the job left for us: its output file, already in the shared output folder."""
        return [job.output] if job.output.exists() else []

    # accounting ------------------------------------------------------------------------------

    def accounting(self, job_id: int, wait: float = ACCOUNTING_WAIT) -> Accounting | None:
        """The job's accounting once its batch step is recorded as ended; the last record read
        (perhaps without a peak) when slurmdbd is slower than `wait`."""
        deadline = time.monotonic() + wait
        record: Accounting | None = None
        while True:
            # slurmdbd busy or restarting: asked again until the deadline.
            with contextlib.suppress(SlurmUnavailable):
                record = accounting(self.config, job_id) or record
            done = (
                record is not None and record.max_rss is not None
                and record.batch_state not in ("", "RUNNING", "PENDING", "COMPLETING")
            )
            if done or time.monotonic() > deadline:
                return record
            time.sleep(min(0.2, self.config.poll_interval))


def cancel_cluster_job(config: SlurmConfig, slurm_job_id: int) -> str:
    """An approved kill of a cluster job: `scancel` of its id, waiting until it ended.

    Never a signal to a pid: the job's processes live on a node this host cannot see.
    Returns the result line for the kill request.
    """
    status = SlurmHost(config).stop(slurm_job_id)
    return f"scancel {slurm_job_id}: job ended {status.state.lower() or 'and left the queue'}"


def _copy(source: BinaryIO, sink: BinaryIO | None) -> None:
    chunk = source.read()
    if chunk and sink is not None:
        sink.write(chunk)
        sink.flush()


def output_file(folder: Path, ledger_id: int) -> Path:
    """Where a submitted job writes its stdout and stderr."""
    return folder / f"slurm-job-{ledger_id}.out"
