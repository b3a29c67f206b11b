"""`swarmdeck dispatch`: run a command on the first host it fits on, this one first, then the
peers in config order.

The booking comes from the peak table as for `swarmdeck run` (cap = booking × cap factor).
Each choice is made in one write transaction against a pending book: what was dispatched to a
host in the last 30 s counts against its room, because a peer's cached reading (and this
host's book, until the runner is admitted) does not show it yet, so two quick dispatches
cannot both squeeze into the same room. 241 when no host can ever fit the job; 244 when its
estimate or history says it runs over 2 h and the host it would get is a single machine.
Hosts are used only through actions/hosts/base.py, so a cluster backend slots in beside them.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from swarmdeck.actions.booking import decide_booking
from swarmdeck.actions.fingerprint import fingerprint
from swarmdeck.actions.hosts.base import Fit, Host, HostError, JobSpec
from swarmdeck.actions.jobrecord import past_runs
from swarmdeck.actions.run_request import checked_seconds
from swarmdeck.durations import age_text, runtime_text
from swarmdeck.errors import SwarmdeckError, UsageError
from swarmdeck.exitcodes import ExitCode
from swarmdeck.probes.machine import local_host_name, mem_total
from swarmdeck.sizes import format_size
from swarmdeck.state import now

if TYPE_CHECKING:
    import sqlite3

    from swarmdeck.config import Config
    from swarmdeck.probes.peer import PeerProber
    from swarmdeck.state import StateStore

PENDING_WINDOW = 30.0
"""Seconds a dispatch counts against its host's room before that host's own figures show it."""
LONG_JOB = 7200.0
"""A job expected to run longer than this may not occupy a single host (exit 244)."""
SINGLE_HOST_KINDS = ("local", "ssh")
RECHECK = 2.0
"""Seconds between looks while no host has room yet."""


@dataclass(frozen=True)
class DispatchRequest:
    """What `swarmdeck dispatch` was asked to do."""

    argv: list[str]
    gpu: bool = False
    estimate_wall: float | None = None
    label: str | None = None
    wait: float | None = None
    """Seconds to wait for a host with room; None: the config's memory.admission_wait."""
    cwd: Path = field(default_factory=Path.cwd)


@dataclass(frozen=True)
class Choice:
    """The host a dispatch went to and its row in the dispatches table."""

    host: Host
    dispatch_id: int


def say(line: str) -> None:
    print(f"swarmdeck: {line}", file=sys.stderr, flush=True)


def job_for(config: Config, store: StateStore, request: DispatchRequest) -> JobSpec:
    """The job with its booking from the peak table, its cap and its expected wall time."""
    if not request.argv or not request.argv[0]:
        raise UsageError("dispatch: no command given: put it after --, like: swarmdeck dispatch "
                         "-- make test")
    checked_seconds("--estimate-wall", request.estimate_wall, zero_ok=False)
    checked_seconds("--wait", request.wait, zero_ok=True)
    total = mem_total()
    workload = fingerprint(request.argv, request.cwd)
    booking = decide_booking(
        past_runs(store, workload),
        declared_cap=None,
        default_prediction=config.memory.default_prediction.resolve(total),
        cap_factor=config.memory.cap_factor,
        unbounded=False,
        slice_cap=total,
    )
    label = request.label or " ".join([Path(request.argv[0]).name, *request.argv[1:]])[:60]
    return JobSpec(
        argv=tuple(request.argv), cwd=request.cwd, label=label, booking=booking.booked,
        cap=booking.cap, gpu=request.gpu,
        estimate_wall=request.estimate_wall or longest_recent_run(store, workload),
        fingerprint=workload,
    )


def longest_recent_run(store: StateStore, workload: str) -> float | None:
    """The longest of the workload's recent recorded runs, in seconds; None without history."""
    with store.read() as conn:
        row = conn.execute(
            "SELECT MAX(duration) FROM (SELECT duration FROM peaks WHERE fingerprint = ?"
            " ORDER BY recorded_at DESC LIMIT 5)",
            (workload,),
        ).fetchone()
    return float(row[0]) if row and row[0] is not None else None


def pending(conn: sqlite3.Connection, host: str, local: str, at: float) -> int:
    """Memory dispatched to `host` in the last PENDING_WINDOW seconds that its own figures may
    not show yet: every such dispatch to a peer; to this host, those whose runner has no
    ledger row yet (once it has, the book counts it)."""
    row = conn.execute(
        "SELECT COALESCE(SUM(booked), 0) FROM dispatches WHERE host = ? AND created_at > ?"
        " AND (host != ? OR job_id IS NULL)",
        (host, at - PENDING_WINDOW, local),
    ).fetchone()
    return int(row[0])


def choose(
    store: StateStore, hosts: list[Host], fits: dict[str, Fit], job: JobSpec
) -> Choice | None:
    """The first host whose room holds the job beside what is pending there; the dispatch is
    booked in the same transaction, so a second dispatch sees it."""
    local = local_host_name()
    with store.transaction() as conn:
        at = now()
        for host in hosts:
            fit = fits[host.name]
            if not fit.now:
                continue
            held = pending(conn, host.name, local, at)
            if fit.room is not None and job.booking + held > fit.room:
                continue
            cursor = conn.execute(
                "INSERT INTO dispatches (argv, host, reason, booked, created_at)"
                " VALUES (?, ?, ?, ?, ?)",
                (json.dumps(list(job.argv)), host.name, "fits now", job.booking, at),
            )
            assert cursor.lastrowid is not None
            return Choice(host, cursor.lastrowid)
    return None


def fit_lines(fits: dict[str, Fit]) -> str:
    return "; ".join(f"{name}: {fit.reason or 'fits'}" for name, fit in fits.items())


def hosts_of(config: Config, store: StateStore) -> list[Host]:
    """This host, then each enabled peer in config order, then the Slurm cluster when [slurm]
    is enabled (chosen when no host or peer fits)."""
    from swarmdeck.actions.hosts.local import LocalHost

    hosts: list[Host] = [LocalHost(config, store)]
    peers = [host for host in config.hosts if host.enabled]
    if peers:
        from swarmdeck.actions.hosts.ssh import SshHost

        hosts += [SshHost(peer, store) for peer in peers]
    if config.slurm.enabled:
        from swarmdeck.actions.hosts.slurm import SlurmHost

        hosts.append(SlurmHost(config, store))
    return hosts


def read_fits(config: Config, hosts: list[Host], job: JobSpec, prober: PeerProber | None
              ) -> dict[str, Fit]:
    """Each host's fit from figures read now (the peers over ssh, one round at once)."""
    if prober is not None:
        prober.read_all(config)
    return {host.name: host.fits(job) for host in hosts}


def dispatch(config: Config, store: StateStore, request: DispatchRequest) -> int:
    """Pick a host and run the job there; the contract's exit code."""
    job = job_for(config, store, request)
    hosts = hosts_of(config, store)
    prober: PeerProber | None = None
    if any(host.kind == "ssh" for host in hosts):
        from swarmdeck.probes.peer import PeerProber

        prober = PeerProber()
    try:
        choice = _wait_for_host(config, store, hosts, job, prober, request)
    finally:
        if prober is not None:
            prober.close()
    if isinstance(choice, int):
        for host in hosts:
            host.close()
        return choice
    try:
        code = _run_on(choice, job, store)
    except SwarmdeckError as error:
        say(error.message)
        code = int(error.exit_code)
    finally:
        for host in hosts:
            host.close()
    with store.transaction() as conn:
        conn.execute("UPDATE dispatches SET exit_code = ? WHERE id = ?", (code, choice.dispatch_id))
    return code


def _wait_for_host(
    config: Config,
    store: StateStore,
    hosts: list[Host],
    job: JobSpec,
    prober: PeerProber | None,
    request: DispatchRequest,
) -> Choice | int:
    wait = request.wait if request.wait is not None else config.memory.admission_wait
    started = time.monotonic()
    said = False
    while True:
        fits = read_fits(config, hosts, job, prober)
        # A host that could not be read is "not read", never "never": only when every host
        # was read and none can ever hold the job is it one no host can fit.
        if not any(fit.may_ever for fit in fits.values()):
            needs = f"{format_size(job.booking)} booked{' and a GPU' if job.gpu else ''}"
            say(f"no host can ever fit this job ({needs}): "
                f"{fit_lines(fits)} (exit 241)")
            return int(ExitCode.NEVER_FITS_ANY_HOST)
        first = next(host for host in hosts if fits[host.name].may_ever)
        if (job.estimate_wall or 0) > LONG_JOB and first.kind in SINGLE_HOST_KINDS:
            say(f"this job is expected to run {runtime_text(job.estimate_wall or 0)}, over "
                f"the {age_text(LONG_JOB)} limit, and would occupy {first.name} alone (exit 244): "
                "give it to the cluster (swarmdeck run --on slurm) or split it")
            return int(ExitCode.LONG_JOB_SINGLE_HOST)
        choice = choose(store, hosts, fits, job)
        if choice is not None:
            return choice
        waited = time.monotonic() - started
        if waited >= wait:
            say(f"no host had room for {format_size(job.booking)} within {wait:g} s: "
                f"{fit_lines(fits)} (exit 252)")
            return int(ExitCode.NOT_ADMITTED)
        if not said:
            say(f"waiting for room: {fit_lines(fits)}")
            said = True
        time.sleep(min(RECHECK, wait - waited))


def _run_on(choice: Choice, job: JobSpec, store: StateStore) -> int:
    from swarmdeck.actions.peer_run import compare_toolchains, drive, toolchain_lines

    host = choice.host
    say(f"dispatched to {host.name}")
    if host.kind == "ssh":
        from swarmdeck.actions.hosts.ssh import SshHost

        assert isinstance(host, SshHost)
        rows = compare_toolchains(host)
        if not all(row.same for row in rows):
            for line in toolchain_lines(rows, host.name):
                say(line)
            raise HostError(
                f"toolchains differ on {host.name}; nothing ran: `swarmdeck peer run {host.name}"
                " --accept-toolchain -- …` runs it there anyway"
            )
    return drive(host, job, store, on_submit=lambda job_id: _link(store, choice, job_id))


def _link(store: StateStore, choice: Choice, job_id: int) -> None:
    with store.transaction() as conn:
        conn.execute("UPDATE dispatches SET job_id = ? WHERE id = ?", (job_id, choice.dispatch_id))
