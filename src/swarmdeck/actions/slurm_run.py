"""`swarmdeck run --on slurm`: book from the peak table, submit with `sbatch --mem`, follow it.

The same fingerprint and booking rules as a local run decide `--mem` (the cap: Slurm's memory
limit is both what it books and what it enforces), the job is a ledger row whose host is its
node once it starts, its output file is copied to our stdout as it grows, and the MaxRSS of its
batch step goes into the peak table, so the next booking learns exactly as after a local run.
Interrupting cancels the job (`scancel`) and waits until the engine says it ended.
"""

from __future__ import annotations

import json
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from swarmdeck import paths
from swarmdeck.actions.booking import Booking, decide_booking, hit_ceiling
from swarmdeck.actions.fingerprint import fingerprint
from swarmdeck.actions.hosts.slurm import (
    Followed,
    SlurmError,
    SlurmHost,
    Submission,
    exit_for,
    fit_of,
    output_file,
)
from swarmdeck.actions.jobrecord import Ending, past_runs, record_end
from swarmdeck.actions.jobwatch import StopSignals
from swarmdeck.actions.run_request import RunRequest
from swarmdeck.actions.runner import check_request, job_label, parse_cap, say
from swarmdeck.errors import UsageError
from swarmdeck.exitcodes import ExitCode
from swarmdeck.probes.ledger import QUEUED, RUNNING
from swarmdeck.probes.procs import own_identity
from swarmdeck.probes.slurm import cluster_label
from swarmdeck.sizes import format_size
from swarmdeck.state import now

if TYPE_CHECKING:
    from swarmdeck.config import Config, SlurmConfig
    from swarmdeck.state import StateStore


def output_folder(config: SlurmConfig) -> Path:
    """Where job output files go: the configured shared folder, else the state folder's jobs/."""
    return Path(config.output_dir).expanduser() if config.output_dir else paths.state_dir() / "jobs"


def slurm_booking(config: Config, store: StateStore, request: RunRequest, largest: int) -> Booking:
    """The job's booking and cap from its history, as for a local run; `largest` (the biggest
    node) plays the slice's part."""
    declared = parse_cap(request.cap, largest) if request.cap else None
    return decide_booking(
        past_runs(store, fingerprint(request.argv, request.cwd)),
        declared_cap=declared,
        default_prediction=config.memory.default_prediction.resolve(largest),
        cap_factor=config.memory.cap_factor,
        unbounded=request.unbounded,
        slice_cap=largest,
    )


def _insert_row(
    store: StateStore, request: RunRequest, label: str, host: str, workload: str, booking: Booking
) -> int:
    runner = own_identity()
    with store.transaction() as conn:
        cursor = conn.execute(
            "INSERT INTO jobs (label, host, fingerprint, argv, cwd, state, runner_pid,"
            " runner_start_ticks, booked, cap, admitted_via, oom_score_adj, threads, detached,"
            " timeout, created_at, admitted_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?,"
            " ?, ?, ?, ?)",
            (
                label, host, workload, json.dumps(request.argv), str(request.cwd), QUEUED,
                runner.pid, runner.start_ticks, booking.booked, booking.cap, booking.via.value,
                booking.oom_score_adj, request.threads, 0, request.timeout, now(), now(),
            ),
        )
    assert cursor.lastrowid is not None
    return cursor.lastrowid


def _mark_submitted(store: StateStore, job_id: int, slurm_job_id: int, output: Path) -> None:
    with store.transaction() as conn:
        conn.execute(
            "UPDATE jobs SET slurm_job_id = ?, output_path = ? WHERE id = ?",
            (slurm_job_id, str(output), job_id),
        )


def _mark_started(store: StateStore, job_id: int, node: str, started_at: float) -> None:
    with store.transaction() as conn:
        conn.execute(
            "UPDATE jobs SET state = ?, host = ?, started_at = ? WHERE id = ?",
            (RUNNING, node, started_at, job_id),
        )


def run_on_slurm(
    config: Config,
    store: StateStore,
    request: RunRequest,
    note: Callable[[str], None] = say,
    sink: BinaryIO | None = None,
) -> int:
    """Submit one job to the cluster and follow it; returns the exit code of the contract."""
    check_request(request)
    if request.detach:
        raise UsageError("run --on slurm: --detach is not needed: the cluster keeps the job")
    slurm = config.slurm
    if not slurm.enabled:
        where = config.path or paths.config_path()
        raise UsageError(
            f"run --on slurm: the [slurm] table of {where} is not enabled: set enabled = true"
        )
    host = SlurmHost(slurm)
    try:
        nodes = host.nodes()
    except SlurmError as error:
        note(error.message)
        return int(error.exit_code)
    largest = max((n.mem_total for n in nodes if n.usable), default=0)
    booking = slurm_booking(config, store, request, largest)
    if not fit_of(nodes, booking.cap, request.threads or 1).ever:
        note(
            f"no node of {cluster_label(slurm)} can ever hold {format_size(booking.cap)}"
            f" (the largest usable has {format_size(largest)}); nothing was submitted"
        )
        return int(ExitCode.NEVER_FITS_ANY_HOST)
    workload = fingerprint(request.argv, request.cwd)
    label = job_label(request)
    job_id = _insert_row(store, request, label, cluster_label(slurm), workload, booking)
    submission = Submission(
        argv=list(request.argv), cwd=request.cwd, label=label, booking=booking,
        threads=request.threads, output=output_file(output_folder(slurm), job_id),
        ledger_id=job_id,
    )
    signals = StopSignals()
    signals.install()
    try:
        try:
            submitted = host.submit(submission)
        except SlurmError as error:
            return _never_ran(store, job_id, workload, booking, error.message, note)
        _mark_submitted(store, job_id, submitted.slurm_job_id, submitted.output)
        note(
            f"job {job_id} is Slurm job {submitted.slurm_job_id} with --mem "
            f"{format_size(booking.cap)} (booked via {booking.via.value})"
        )
        followed = host.follow(
            submitted, signals.read_fd, signals.pending,
            lambda node, at: _mark_started(store, job_id, node, at),
            sink if sink is not None else sys.stdout.buffer, request.timeout,
        )
    finally:
        signals.restore()
    return _record(host, store, job_id, workload, booking, submitted.slurm_job_id, followed, note)


def _never_ran(
    store: StateStore, job_id: int, workload: str, booking: Booking, message: str,
    note: Callable[[str], None],
) -> int:
    note(message)
    record_end(store, job_id, workload, booking.cap,
               Ending(int(ExitCode.REFUSED), message, None, None, False, None))
    return int(ExitCode.REFUSED)


def _record(
    host: SlurmHost,
    store: StateStore,
    job_id: int,
    workload: str,
    booking: Booking,
    slurm_job_id: int,
    followed: Followed,
    note: Callable[[str], None],
) -> int:
    status = followed.status
    record = host.accounting(slurm_job_id) if followed.started_at is not None else None
    state = record.state if record and record.state else status.state
    code, outcome = exit_for(state, record.exit_code if record else status.exit_code)
    if followed.stopped_by is not None:
        name = signal.Signals(followed.stopped_by).name
        code, outcome = 128 + followed.stopped_by, f"cancelled: runner got {name}"
    elif followed.timed_out:
        code, outcome = int(ExitCode.TIMED_OUT), "timed out"
    own_cap = code == ExitCode.OWN_CAP
    peak = record.max_rss if record else None
    if own_cap:
        # Killed at its limit: it held its cap, whatever the last accounting sample caught.
        peak = max(peak or 0, booking.cap)
    ending = Ending(
        exit_code=code,
        outcome=outcome,
        peak=peak,
        kernel_peak=None,
        hit_ceiling=peak is not None and hit_ceiling(peak, booking.cap, own_cap),
        duration=record.elapsed if record else None,
    )
    record_end(store, job_id, workload, booking.cap, ending)
    if code == ExitCode.OWN_CAP:
        note(f"job {job_id} (Slurm {slurm_job_id}) hit its own memory cap of "
             f"{format_size(booking.cap)} (exit 250); the next run books its cap")
    elif code == ExitCode.SLICE_FULL:
        note(f"job {job_id} (Slurm {slurm_job_id}) ended {state}: not its fault (exit 254), "
             "rerun it")
    elif code == ExitCode.TIMED_OUT:
        note(f"job {job_id} (Slurm {slurm_job_id}) timed out (exit 253)")
    elif followed.stopped_by is not None:
        note(f"job {job_id}: Slurm job {slurm_job_id} cancelled and ended")
    return code
