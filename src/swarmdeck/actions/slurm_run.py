"""`swarmdeck run --on slurm`: book from the peak table, submit with `sbatch --mem`, follow it.

The same fingerprint and booking rules as a local run decide `--mem` (the cap: Slurm's memory
limit is both what it books and what it enforces), the job is a ledger row whose host is its
node once it starts, its output file is copied to our stdout as it grows, and the MaxRSS of its
batch step goes into the peak table, so the next booking learns exactly as after a local run.
Interrupting cancels the job (`scancel`) and waits until the engine says it ended.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from swarmdeck import paths
from swarmdeck.actions.booking import Booking, decide_booking
from swarmdeck.actions.fingerprint import fingerprint
from swarmdeck.actions.hosts.base import HostError, JobSpec
from swarmdeck.actions.hosts.slurm import SlurmHost, fit_of
from swarmdeck.actions.jobrecord import past_runs
from swarmdeck.actions.jobwatch import StopSignals
from swarmdeck.actions.run_request import RunRequest
from swarmdeck.actions.runner import check_request, job_label, parse_cap, say
from swarmdeck.errors import UsageError
from swarmdeck.exitcodes import ExitCode
from swarmdeck.sizes import format_size

if TYPE_CHECKING:
    from swarmdeck.config import Config
    from swarmdeck.state import StateStore


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


def _stdout(data: bytes) -> None:
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()


def run_on_slurm(
    config: Config,
    store: StateStore,
    request: RunRequest,
    note: Callable[[str], None] = say,
    out: Callable[[bytes], None] = _stdout,
) -> int:
    """Submit one job to the cluster and follow it; returns the exit code of the contract."""
    check_request(request)
    if request.detach:
        raise UsageError("run --on slurm: --detach is not needed: the cluster keeps the job")
    if not config.slurm.enabled:
        where = config.path or Path(paths.config_path())
        raise UsageError(
            f"run --on slurm: the [slurm] table of {where} is not enabled: set enabled = true"
        )
    host = SlurmHost(config, store)
    try:
        nodes = host.nodes()
    except HostError as error:
        note(error.message)
        return int(error.exit_code)
    largest = max((n.mem_total for n in nodes if n.usable), default=0)
    booking = slurm_booking(config, store, request, largest)
    fit = fit_of(host.name, nodes, booking.cap, request.threads or 1)
    if not fit.ever:
        note(f"no node of {host.name} can ever hold this job: {fit.reason}; nothing was submitted")
        return int(ExitCode.NEVER_FITS_ANY_HOST)
    job = JobSpec(
        argv=tuple(request.argv), cwd=request.cwd, label=job_label(request),
        booking=booking.booked, cap=booking.cap, threads=request.threads,
        fingerprint=fingerprint(request.argv, request.cwd), declared_cap=request.cap or "",
    )
    signals = StopSignals()
    signals.install()
    try:
        try:
            handle = host.submit(job, booking)
        except HostError as error:
            note(error.message)
            return int(error.exit_code)
        note(
            f"job {handle.job_id} is Slurm job {handle.remote_id} with --mem "
            f"{format_size(booking.cap)} (booked via {booking.via.value})"
        )
        try:
            ended = host.follow(handle, out, signals.read_fd, signals.pending, request.timeout)
        except BaseException:
            # Following failed here: the job must not go on in the cluster without its runner.
            with contextlib.suppress(HostError):
                host.cancel(int(handle.remote_id))
            raise
    finally:
        signals.restore()
    line = verdict_line(handle.job_id, handle.remote_id, ended.exit_code, ended.outcome,
                        booking.cap)
    if line:
        note(line)
    return ended.exit_code


def verdict_line(job_id: int, slurm_job_id: str, code: int, outcome: str, cap: int) -> str | None:
    """What the person reads when swarmdeck, not the command, decided the exit code."""
    job = f"job {job_id} (Slurm {slurm_job_id})"
    if code == ExitCode.OWN_CAP:
        return (f"{job} hit its own memory cap of {format_size(cap)} (exit 250); "
                "the next run books its cap: rerun with a larger --cap if it needs more")
    if code == ExitCode.SLICE_FULL:
        return f"{job} ended {outcome} (exit 254): rerun it"
    if code == ExitCode.TIMED_OUT:
        return f"{job} timed out (exit 253)"
    if outcome.startswith("cancelled: runner got"):
        return f"{job} cancelled and ended"
    return None
