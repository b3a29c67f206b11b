"""A Slurm cluster as a host: fits / submit / follow / stop / fetch, through the client commands.

Slurm is the scheduler; swarmdeck only brings its discipline: the job's memory is booked with
`sbatch --mem` from the learned peak, the engine's ending is mapped onto our exit codes
(OUT_OF_MEMORY → 250, TIMEOUT → 253, NODE_FAIL or preemption → 254, the command's own status
otherwise), and stopping a job is `scancel` of its id, never a signal to a pid on a node.
"""

from __future__ import annotations

import contextlib
import json
import math
import select
import shlex
import signal
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from swarmdeck import paths
from swarmdeck.actions.booking import Booking, Via, decide_booking, hit_ceiling
from swarmdeck.actions.hosts.base import Ended, Fit, Handle, Host, HostError, JobSpec
from swarmdeck.actions.jobrecord import Ending, past_runs, record_end
from swarmdeck.actions.reconcile import runner_alive
from swarmdeck.exitcodes import ExitCode
from swarmdeck.ledger import add_job, close_job, mark_started_on, open_cluster_rows
from swarmdeck.ledger import mark_submitted as ledger_submitted
from swarmdeck.ledger.schema import ACTIVE, LOST, QUEUED
from swarmdeck.probes.procs import own_identity
from swarmdeck.probes.slurm import (
    Accounting,
    JobStatus,
    SlurmNode,
    SlurmUnavailable,
    accounting,
    cluster_label,
    job_status,
    read_nodes,
    run_client,
)
from swarmdeck.sizes import MIB, format_size
from swarmdeck.state import now

if TYPE_CHECKING:
    from swarmdeck.config import Config, SlurmConfig
    from swarmdeck.state import StateStore

OWN_CAP_STATES = frozenset({"OUT_OF_MEMORY"})
TIMEOUT_STATES = frozenset({"TIMEOUT", "DEADLINE"})
NOT_ITS_FAULT_STATES = frozenset({"NODE_FAIL", "PREEMPTED", "BOOT_FAIL"})
ACCOUNTING_WAIT = 15.0
"""Seconds to wait after a job ended for slurmdbd to hold its batch step's peak."""
STOP_WAIT = 60.0
"""Seconds `stop` waits for the engine to say a cancelled job ended."""
UNKNOWN_GRACE = 30.0
"""Seconds a followed job may be unknown to both the controller and accounting before it is
taken as lost (a job just submitted can be briefly unknown to accounting alone)."""


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


def ending_of(status: JobStatus, record: Accounting | None) -> tuple[str, str]:
    """The state and exit code a job ended with: the controller's, which is final when it says
    the job is over (accounting may still hold an earlier state then, such as COMPLETED for a
    job the cgroup OOM-killed); an OUT_OF_MEMORY from either side wins; accounting's when the
    controller no longer knew the job."""
    if record is not None and record.state in OWN_CAP_STATES:
        return record.state, record.exit_code
    if status.state:
        return status.state, status.exit_code
    if record is not None:
        return record.state, record.exit_code
    return "", ""


def fit_of(host: str, nodes: Sequence[SlurmNode], cap: int, threads: int) -> Fit:
    """Whether a job with `--mem` of `cap` and `threads` cores fits a usable node now, or ever;
    the room given is that of the node with the most memory free."""
    usable = [node for node in nodes if node.usable]
    ever = [n for n in usable if n.mem_total >= cap and n.cores >= threads]
    at_once = [n for n in ever if (n.mem_free is None or n.mem_free >= cap)
               and n.cores_idle >= threads]
    best = max(at_once or ever or usable, key=lambda n: n.mem_free or 0, default=None)
    largest = max((n.mem_total for n in usable), default=0)
    room = best.mem_free if best else None
    if at_once:
        reason = ""
    elif ever:
        reason = f"needs {format_size(cap)}, most free on a node {format_size(room or 0)}"
    else:
        reason = f"--mem {format_size(cap)}, the largest usable node has {format_size(largest)}"
    return Fit(
        host, bool(at_once), bool(ever), room=room,
        cores_free=best.cores_idle if best else None, gpus_free=None, reason=reason,
    )


# ---- the host --------------------------------------------------------------------------------


class SlurmHost(Host):
    """The cluster behind the hosts interface. Its ledger rows live in this host's store:
    host = the cluster's label while pending, the node's name once the job started."""

    kind = "slurm"

    def __init__(self, config: Config, store: StateStore) -> None:
        self.config = config
        self.slurm = config.slurm
        self.store = store
        self.name = cluster_label(config.slurm)

    # fits ------------------------------------------------------------------------------------

    def nodes(self) -> list[SlurmNode]:
        """The partition's nodes; HostError (78) when the cluster does not answer."""
        try:
            return read_nodes(self.slurm)
        except SlurmUnavailable as error:
            raise HostError(f"the Slurm cluster is not read ({error}); nothing was submitted")\
                from None

    def fits(self, job: JobSpec) -> Fit:
        if not self.slurm.enabled:
            return Fit(self.name, False, False, reason="[slurm] is not enabled")
        if job.gpu:
            # sbatch_argv asks for memory and cores only: a GPU job sent there would run
            # without a card.
            return Fit(self.name, False, False,
                       reason="asks the cluster for no GPU: a GPU job goes to a host with a card")
        try:
            nodes = read_nodes(self.slurm)
        except SlurmUnavailable as error:
            return Fit(self.name, False, False, reason=f"not read ({error})", unread=True)
        return fit_of(self.name, nodes, job.cap or job.booking, job.threads or 1)

    # submit ----------------------------------------------------------------------------------

    def booking_of(self, job: JobSpec, largest: int) -> Booking:
        """The job's booking: as given, or (cap 0) from its history in the peak table."""
        if job.cap:
            via = Via.HISTORY if past_runs(self.store, job.fingerprint) else Via.DEFAULT
            return Booking(job.booking, job.cap, via, 0)
        return decide_booking(
            past_runs(self.store, job.fingerprint),
            declared_cap=None,
            default_prediction=self.config.memory.default_prediction.resolve(largest),
            cap_factor=self.config.memory.cap_factor,
            unbounded=False,
            slice_cap=largest,
        )

    def sbatch_argv(self, job: JobSpec, cap: int, output: Path, ledger_id: int) -> list[str]:
        slurm = self.slurm
        argv = [
            "sbatch", "--parsable", f"--job-name={job.label}", mem_argument(cap),
            f"--output={output}", f"--chdir={job.cwd}", f"--comment=swarmdeck job {ledger_id}",
            # A job whose node failed ends NODE_FAIL (exit 254, rerun) instead of being queued
            # again behind the person's back; sbatch_args may say --requeue to change that.
            "--no-requeue",
        ]
        if job.threads:
            argv.append(f"--cpus-per-task={job.threads}")
        if slurm.partition:
            argv.append(f"--partition={slurm.partition}")
        if slurm.account:
            argv.append(f"--account={slurm.account}")
        argv += list(slurm.sbatch_args)
        argv.append("--wrap=exec " + shlex.join(job.argv))
        return argv

    def submit(self, job: JobSpec, booking: Booking | None = None) -> Handle:
        """`sbatch` the job with `--mem` = its cap; returns once Slurm accepted it (a pending
        job is Slurm's to start). The ledger row is made first and closed if sbatch refuses."""
        if booking is None:
            largest = max((n.mem_total for n in self.nodes() if n.usable), default=0)
            booking = self.booking_of(job, largest)
        job_id = insert_cluster_job(self.store, self.name, job, booking)
        output = output_file(output_folder(self.slurm), job_id)
        output.parent.mkdir(parents=True, exist_ok=True)
        output.touch()
        argv = self.sbatch_argv(job, booking.cap, output, job_id)
        try:
            text = run_client(self.slurm, argv, timeout=self.slurm.timeout * 4)
        except SlurmUnavailable as error:
            message = f"sbatch refused the job: {error}"
            end_cluster_job(self.store, job_id, job.fingerprint, booking.cap,
                            Ending(int(ExitCode.REFUSED), message, None, None, False, None))
            raise HostError(message) from None
        first = text.strip().split(";")[0]
        if not first.isdigit():
            message = f"sbatch printed no job id: {text.strip()[:80]!r}"
            end_cluster_job(self.store, job_id, job.fingerprint, booking.cap,
                            Ending(int(ExitCode.REFUSED), message, None, None, False, None))
            raise HostError(message)
        mark_submitted(self.store, job_id, int(first), output)
        return Handle(
            self.name, job_id, first, "",
            {"output": str(output), "fingerprint": job.fingerprint, "cap": str(booking.cap)},
        )

    # follow ----------------------------------------------------------------------------------

    def follow(
        self,
        handle: Handle,
        out: Callable[[bytes], None],
        stop_fd: int | None = None,
        stop_pending: Callable[[], int | None] | None = None,
        timeout: float | None = None,
    ) -> Ended:
        """Copy the job's output to `out` as it grows until the engine says it ended, then
        close its ledger row with the mapped exit code and its batch step's MaxRSS as peak.

        With `stop_fd`/`stop_pending` (a StopSignals), a stop signal cancels the job and
        following goes on until it ended; so do `timeout` seconds of running (exit 253).
        """
        slurm_job_id = int(handle.remote_id)
        interval = self.slurm.poll_interval
        started = False
        stopped_by: int | None = None
        timed_out = False
        started_at: float | None = None
        unknown_since: float | None = None
        # poll, not select: a process with many files open may hold the fd past FD_SETSIZE.
        waker = select.poll()
        if stop_fd is not None:
            waker.register(stop_fd, select.POLLIN)
        with open(handle.extra["output"], "rb") as output:
            while True:
                status = self._status(slurm_job_id)
                _copy(output, out)
                unknown_since = self._check_known(handle, status, unknown_since)
                if status is not None and status.state:
                    if not started and status.state not in ("PENDING", "") and status.node:
                        started, started_at = True, time.time()
                        mark_started(self.store, handle.job_id, status.node, started_at)
                    if status.over:
                        _copy(output, out)
                        break
                if stopped_by is None and not timed_out:
                    stopped_by = stop_pending() if stop_pending is not None else None
                    timed_out = (stopped_by is None and timeout is not None
                                 and started_at is not None
                                 and time.time() - started_at > timeout)
                    if stopped_by is not None or timed_out:
                        self.cancel(slurm_job_id)
                # A stop signal writes to stop_fd (the wakeup fd), ending the pause at once.
                waker.poll(interval * 1000)
        return self._close(handle, status, started, stopped_by, timed_out)

    def _close(
        self, handle: Handle, status: JobStatus, started: bool, stopped_by: int | None,
        timed_out: bool,
    ) -> Ended:
        slurm_job_id = int(handle.remote_id)
        cap = int(handle.extra["cap"])
        record = self.accounting(slurm_job_id) if started else None
        code, outcome = exit_for(*ending_of(status, record))
        if stopped_by is not None:
            name = signal.Signals(stopped_by).name
            code, outcome = 128 + stopped_by, f"cancelled: runner got {name}"
        elif timed_out:
            code, outcome = int(ExitCode.TIMED_OUT), "timed out"
        own_cap = code == ExitCode.OWN_CAP
        peak = record.max_rss if record else None
        if own_cap:
            # Killed at its limit: it held its cap, whatever the last accounting sample caught.
            peak = max(peak or 0, cap)
        ending = Ending(
            exit_code=code,
            outcome=outcome,
            peak=peak,
            kernel_peak=None,
            hit_ceiling=peak is not None and hit_ceiling(peak, cap, own_cap),
            duration=record.elapsed if record else None,
        )
        end_cluster_job(self.store, handle.job_id, handle.extra["fingerprint"], cap, ending)
        return Ended(code, outcome)

    def _status(self, job_id: int) -> JobStatus | None:
        """The job's status (state "" when neither the controller nor accounting knows it), or
        None while the controller does not answer (we keep asking)."""
        try:
            return job_status(self.slurm, job_id)
        except SlurmUnavailable:
            return None

    def _check_known(
        self, handle: Handle, status: JobStatus | None, unknown_since: float | None
    ) -> float | None:
        """When the job went unknown; HostError (its row closed as lost) past UNKNOWN_GRACE."""
        if status is None or status.state:
            return None
        at = time.monotonic()
        if unknown_since is None:
            return at
        if at - unknown_since < UNKNOWN_GRACE:
            return unknown_since
        message = f"Slurm no longer knows job {handle.remote_id}: not in the queue or accounting"
        mark_lost(self.store, handle.job_id, f"lost: {message}")
        raise HostError(message)

    # stop ------------------------------------------------------------------------------------

    def cancel(self, slurm_job_id: int) -> None:
        """Ask the engine to end the job (`scancel`); it ends in its own time."""
        try:
            run_client(self.slurm, ["scancel", str(slurm_job_id)])
        except SlurmUnavailable as error:
            raise HostError(f"scancel {slurm_job_id} failed: {error}") from None

    def stop(self, handle: Handle, signum: int = signal.SIGTERM, wait: float = STOP_WAIT) -> None:
        """`scancel` the job (Slurm sends its tree TERM, then KILL after KillWait) and wait
        until the engine says it ended; never a signal to a pid on a node."""
        self.wait_over(int(handle.remote_id), wait)

    def wait_over(self, slurm_job_id: int, wait: float = STOP_WAIT) -> JobStatus:
        """Cancel the job and wait until it ended; returns its last status."""
        self.cancel(slurm_job_id)
        deadline = time.monotonic() + wait
        while True:
            status = self._status(slurm_job_id)
            if status is not None and status.state and status.over:
                return status
            if time.monotonic() > deadline:
                raise HostError(
                    f"Slurm job {slurm_job_id} was cancelled but is still not over after {wait:g} s"
                )
            time.sleep(self.slurm.poll_interval)

    # fetch -----------------------------------------------------------------------------------

    def fetch(self, handle: Handle, paths: tuple[str, ...], into: Path) -> list[Path]:
        """The job ran in place (`--chdir` on a folder the nodes share): what it wrote is
        already here; lists the paths that exist."""
        return [into / path for path in paths if (into / path).exists()]

    # accounting ------------------------------------------------------------------------------

    def accounting(self, slurm_job_id: int, wait: float = ACCOUNTING_WAIT) -> Accounting | None:
        """The job's accounting once its batch step is recorded as ended; the last record read
        (perhaps without a peak) when slurmdbd is slower than `wait`."""
        deadline = time.monotonic() + wait
        record: Accounting | None = None
        while True:
            # slurmdbd busy or restarting: asked again until the deadline.
            with contextlib.suppress(SlurmUnavailable):
                record = accounting(self.slurm, slurm_job_id) or record
            done = (
                record is not None and record.max_rss is not None
                and record.batch_state not in ("", "RUNNING", "PENDING", "COMPLETING")
            )
            if done or time.monotonic() > deadline:
                return record
            time.sleep(min(0.2, self.slurm.poll_interval))


def cancel_cluster_job(config: Config, store: StateStore, slurm_job_id: int) -> str:
    """An approved kill of a cluster job: `scancel` of its id, waiting until it ended.

    Never a signal to a pid: the job's processes live on a node this host cannot see.
    Returns the result line for the kill request.
    """
    status = SlurmHost(config, store).wait_over(slurm_job_id)
    return f"scancel {slurm_job_id}: job ended {status.state.lower() or 'and left the queue'}"


def output_folder(config: SlurmConfig) -> Path:
    """Where job output files go: the configured shared folder, else the state folder's jobs/."""
    if config.output_dir:
        return Path(config.output_dir).expanduser()
    return Path(paths.state_dir(), "jobs")


def output_file(folder: Path, ledger_id: int) -> Path:
    """Where a submitted job writes its stdout and stderr."""
    return folder / f"slurm-job-{ledger_id}.out"


def _copy(source: BinaryIO, out: Callable[[bytes], None]) -> None:
    chunk = source.read()
    if chunk:
        out(chunk)


# ---- the ledger rows of cluster jobs ----------------------------------------------------------


def insert_cluster_job(store: StateStore, host: str, job: JobSpec, booking: Booking) -> int:
    """The row of a job about to be submitted; its runner is this process."""
    runner = own_identity()
    with store.transaction() as conn:
        return add_job(conn, {
            "label": job.label, "host": host, "fingerprint": job.fingerprint,
            "argv": json.dumps(list(job.argv)), "cwd": str(job.cwd), "state": QUEUED,
            "runner_pid": runner.pid, "runner_start_ticks": runner.start_ticks,
            "booked": booking.booked, "cap": booking.cap, "admitted_via": booking.via.value,
            "oom_score_adj": booking.oom_score_adj, "threads": job.threads,
            "declared_cap": job.declared_cap, "detached": 0, "created_at": now(),
            "admitted_at": now(),
        })


def mark_submitted(store: StateStore, job_id: int, slurm_job_id: int, output: Path) -> None:
    with store.transaction() as conn:
        ledger_submitted(conn, job_id, slurm_job_id, str(output))


def mark_started(store: StateStore, job_id: int, node: str, started_at: float) -> None:
    """The job runs: its row's host becomes its node."""
    with store.transaction() as conn:
        mark_started_on(conn, job_id, node, started_at)


def close_orphaned_rows(store: StateStore) -> list[int]:
    """Mark lost the open rows of cluster jobs whose runner died; returns their ids.

    The Slurm job itself is the cluster's: it may still run, so the outcome names the
    `scancel` that would stop it rather than stopping it behind the person's back.
    """
    with store.read() as conn:
        rows = open_cluster_rows(conn)
    dead = [row for row in rows if not runner_alive(row)]
    if not dead:
        return []
    with store.transaction() as conn:
        for row in dead:
            close_job(
                conn, row["id"], LOST,
                f"lost: its runner died; Slurm job {row['slurm_job_id']} may still run"
                f" (scancel {row['slurm_job_id']})",
                ExitCode.LOST, now(), only_from=ACTIVE,
            )
    return [row["id"] for row in dead]


def mark_lost(store: StateStore, job_id: int, outcome: str) -> None:
    """Close the row as lost, with the exit code every lost row carries."""
    with store.transaction() as conn:
        close_job(conn, job_id, LOST, outcome, ExitCode.LOST, now())


def end_cluster_job(
    store: StateStore, job_id: int, fingerprint: str, cap: int, ending: Ending
) -> None:
    """Close the row; a peak read from accounting goes to the peak table for the next booking."""
    record_end(store, job_id, fingerprint, cap, ending)
