"""Moving a job to a peer by keypress: for one ledger job, each enabled peer's fit now, the
exact `swarmdeck peer run` command, its toolchain differences, and the detached launch.

The app's migrate pane shows these and launches when a person confirms; nothing here runs on
its own. Only a queued job moves: a running one would run twice, an ended one is over (`r`
reruns it), and both the options and the launch refuse them, the launch on the row as it is
then, not as the pane saw it. The fit comes from the peer's cached reading (no SSH); the
toolchain comparison and the launch do talk to the peer, so the app calls them from a worker
thread.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from swarmdeck.actions.admission import end_queued
from swarmdeck.errors import RefusedError
from swarmdeck.exitcodes import ExitCode
from swarmdeck.ledger import job_row
from swarmdeck.ledger.schema import ACTIVE, ADMITTED, MOVED, QUEUED, RUNNING
from swarmdeck.probes.machine import local_host_name
from swarmdeck.probes.memory_book import job_from_row
from swarmdeck.probes.peer_cache import READ, current_reading
from swarmdeck.sizes import exact_size, format_size

if TYPE_CHECKING:
    from swarmdeck.config import Config, HostConfig
    from swarmdeck.probes.memory_book import LedgerJob
    from swarmdeck.state import StateStore

ANNOUNCED = re.compile(r"(?:swarmdeck: )?job (\d+) runs ")
"""The line a started run announces its job id with (actions/detach.py, actions/peer_run.py)."""
LAUNCH_TIMEOUT = 600.0
"""Seconds the detached launch may take: copying the tree and starting the job there."""


@dataclass(frozen=True)
class MigrationOption:
    """One peer the job could move to."""

    host: str
    fits: bool
    room: int | None
    cores_free: int | None
    gpus: str
    reason: str
    """Why it does not fit now; empty when it does."""
    argv: tuple[str, ...]
    """The `swarmdeck peer run … --detach` command, run from the job's folder."""
    cwd: str
    job_id: int
    """The ledger row it moves; `launch` reads it again and refuses once it is no longer queued."""

    @property
    def command(self) -> str:
        """The command as a person would type it."""
        return f"cd {shlex.quote(self.cwd)} && {shlex.join(self.argv)}"

    def summary(self) -> str:
        room = format_size(max(0, self.room)) if self.room is not None else "?"
        cores = str(self.cores_free) if self.cores_free is not None else "?"
        state = "fits now" if self.fits else f"does not fit: {self.reason}"
        gpus = "" if self.gpus == "—" else ", no GPU" if self.gpus == "0" else f", GPUs {self.gpus}"
        return f"{self.host}: room {room}, {cores} threads free{gpus} — {state}"


def peer_run_argv(host: str, job: LedgerJob) -> tuple[str, ...]:
    """The `peer run` line that moves `job` with what it declared: its --cap as it was given
    (none given: the peer books it from its own history) and its --threads. A row from before
    the ledger recorded the declared cap moves with the cap its cage would have had."""
    args = ["swarmdeck", "peer", "run", host, "--detach", "--label", job.label or "job"]
    cap = job.declared_cap if job.declared_cap is not None else (
        exact_size(job.cap) if job.cap else ""
    )
    if cap:
        args += ["--cap", cap]
    if job.threads is not None:
        args += ["--threads", str(job.threads)]
    return (*args, "--", *job.argv)


class MigrationRefused(RefusedError):
    """The job cannot be moved: it runs, or it is over; the message says which and what to do."""


_MOVED_TO = re.compile(r"moved to (?P<host>\S+)(?: \(job (?P<id>\d+)\))?")
"""A moved row's outcome, as `moved_outcome` writes it."""


def moved_to(job: LedgerJob) -> tuple[str, int | None] | None:
    """Where a job withdrawn here because it moved went: the host, and its copy's id in this
    ledger when the launch named it; None for a job that did not move."""
    found = _MOVED_TO.fullmatch(job.outcome or "") if job.state == MOVED else None
    if found is None:
        return None
    return found["host"], int(found["id"]) if found["id"] is not None else None


def moved_copy(job: LedgerJob, jobs: Iterable[LedgerJob]) -> LedgerJob | None:
    """The row of `jobs` that runs a job moved from here: the copy its outcome names ("moved to
    box2 (job 8)"), else the one on that host with its command and folder; None for a job that
    did not move, or whose copy is not among `jobs`."""
    where = moved_to(job)
    if where is None:
        return None
    host, copy_id = where
    others = [other for other in jobs if other.id != job.id and other.host == host]
    if copy_id is not None:
        return next((other for other in others if other.id == copy_id), None)
    return next((other for other in others if other.state in ACTIVE
                 and (other.argv, other.cwd) == (job.argv, job.cwd)), None)


def copy_running(job: LedgerJob, jobs: Iterable[LedgerJob], doing: str) -> str | None:
    """Why `doing` ("rerunning", "migrating") a job moved from here would run it twice: its copy
    on the peer is still active; None when it is not (or the job did not move)."""
    copy = moved_copy(job, jobs)
    if copy is None or copy.state not in ACTIVE:
        return None
    return (f"job {job.id} moved to {copy.host} as job {copy.id}, which is {copy.state} there: "
            f"{doing} it would run it twice; wait until it ends there")


def refusal(job: LedgerJob, jobs: Iterable[LedgerJob] = ()) -> str | None:
    """Why `job` cannot be migrated now, or None: a queued job moves there (its row here ends
    as moved once it started there); an ended one is over, and `r` reruns it, unless it moved
    and its copy among `jobs` still runs there (`copy_running`); a running one would run twice,
    so it is stopped first."""
    if job.state not in ACTIVE:
        return copy_running(job, jobs, "migrating") or (
            f"job {job.id} is over ({job.outcome or job.state}): nothing to migrate; r reruns it"
        )
    if job.state not in (RUNNING, ADMITTED):
        return None
    if job.host and job.host != local_host_name():
        return (f"job {job.id} is running on {job.host}: migrating would run it twice; "
                f"wait until it ends there")
    return (f"job {job.id} is running here: migrating would run it twice; stop it first "
            "(k on its finding) or wait until it ends")


def withdraw_queued(store: StateStore, job_id: int, host: str, moved_id: int | None) -> str:
    """Withdraw a job still queued here, now that it runs on `host` (as job `moved_id` of this
    ledger): its row ends as moved there (exit 242), in one transaction that finds it still
    queued, so its runner can never start it here as well. Nothing is signalled: the runner
    reads its row again within admission.RECHECK_MAX (2 s), finds it moved and exits 242
    saying where the job runs. (It was once woken with SIGTERM, sent to whatever process the
    row named whose command line held `swarmdeck run`; a row any process can write is no proof
    of whom to signal, and the wake saved at most those 2 s.) Returns the line to show."""
    from swarmdeck.probes.procs import ProcessIdentity

    with store.read() as conn:
        row = job_row(conn, job_id)
    if row is None or row["state"] != QUEUED:
        return f"job {job_id} here is no longer queued: nothing withdrawn"
    if row["runner_pid"] is None or row["runner_start_ticks"] is None:
        return f"job {job_id} here names no runner: nothing withdrawn"
    if not ProcessIdentity(row["runner_pid"], row["runner_start_ticks"]).is_alive():
        return f"job {job_id}'s runner here is gone: nothing withdrawn"
    where = moved_outcome(host, moved_id)
    with store.transaction() as conn:
        moved = end_queued(conn, job_id, MOVED, where, ExitCode.MOVED)
    if not moved:
        return (f"job {job_id} here started before it could be withdrawn: it runs here and"
                f" on {host}; stop one of them")
    return f"job {job_id} withdrawn here: {where}"


def moved_outcome(host: str, moved_id: int | None) -> str:
    """The outcome of a row withdrawn because it moved: "moved to box2 (job 6)"."""
    return f"moved to {host}" + (f" (job {moved_id})" if moved_id is not None else "")


def _gpus(figures: dict[str, object]) -> str:
    count = figures.get("gpu_count")
    return str(count) if isinstance(count, int) else "—"


def _option_for(host: HostConfig, job: LedgerJob, refresh_interval: float) -> MigrationOption:
    booked = job.booked or 0
    reading = current_reading(host.name, refresh_interval)
    argv = peer_run_argv(host.name, job)
    if reading.state != READ or reading.book is None or reading.host is None:
        reason = reading.reason or "no memory book in its reading"
        return MigrationOption(host.name, False, None, None, "—", f"not read: {reason}", argv,
                               job.cwd, job.id)
    book = reading.book
    room = book.usable
    cap_limit = host.job_cap.resolve(book.mem_total) if host.job_cap is not None else None
    if booked > book.slice_cap:
        reason = f"books {format_size(booked)}, its slice is {format_size(book.slice_cap)}"
    elif cap_limit is not None and (job.cap or 0) > cap_limit:
        reason = f"cap {format_size(job.cap or 0)} is over its job cap {format_size(cap_limit)}"
    elif booked > room:
        reason = f"needs {format_size(booked)}, room {format_size(max(0, room))}"
    else:
        reason = ""
    return MigrationOption(
        host.name, not reason, room, reading.host.cores.threads_free, _gpus(reading.figures),
        reason, argv, job.cwd, job.id,
    )


def migration_options(config: Config, job: LedgerJob) -> list[MigrationOption]:
    """Each enabled peer, in config order, with its fit for `job` now; MigrationRefused when
    the job cannot move (`refusal`)."""
    refused = refusal(job)
    if refused is not None:
        raise MigrationRefused(refused)
    return [
        _option_for(host, job, config.ui.refresh_interval)
        for host in config.hosts
        if host.enabled and host.name != job.host
    ]


def toolchain_differences(config: Config, host_name: str) -> list[str]:
    """The toolchain lines that differ between here and the peer ("" none); a peer that cannot
    be reached gives one line saying why."""
    from swarmdeck.actions.hosts.base import HostError
    from swarmdeck.actions.peer_run import compare_toolchains, open_host, peer_config

    try:
        host = open_host(peer_config(config, host_name), None)
    except HostError as error:
        return [error.message]
    try:
        rows = compare_toolchains(host)
    except HostError as error:
        return [error.message]
    finally:
        host.close()
    return [f"{row.command}: here {row.here}, there {row.there}" for row in rows if not row.same]


@dataclass(frozen=True)
class Launched:
    """What the detached launch said: its exit code and its last line."""

    code: int
    line: str
    job_id: int | None = None
    """The job's row in this ledger for its run on the peer, as the launch announced it
    ("job N runs …"); None when it named none."""


def launch(option: MigrationOption, store: StateStore) -> Launched:
    """Run the option's command (detached: it returns once the job started there), unless its
    row has ended or started since the option was made (MigrationRefused)."""
    with store.read() as conn:
        row = job_row(conn, option.job_id)
    if row is None:
        raise MigrationRefused(f"job {option.job_id} is not in the ledger: nothing to migrate")
    refused = refusal(job_from_row(row, live=False))
    if refused is not None:
        raise MigrationRefused(refused)
    argv = [sys.executable, "-m", "swarmdeck.cli", *option.argv[1:]]
    try:
        done = subprocess.run(
            argv, cwd=option.cwd, capture_output=True, text=True, timeout=LAUNCH_TIMEOUT,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return Launched(255, f"could not launch: {error}")
    lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    announced = [int(found[1]) for line in lines if (found := ANNOUNCED.match(line))]
    return Launched(done.returncode, lines[-1] if lines else f"exit {done.returncode}",
                    announced[-1] if announced else None)
