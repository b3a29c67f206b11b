"""`swarmdeck run`: book memory on the ledger, run the command in its cage, report what happened.

The exit code is the contract (DESIGN.md): the command's own status, or 250 (hit its own cap),
251 (usage, or no cage could be set up: nothing ran), 252 (not admitted), 253 (timed out),
254 (killed because the shared slice was full). Whatever ends the job, its whole tree is gone
before the runner exits, and its row in the ledger says how it ended.
"""

from __future__ import annotations

import math
import os
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from swarmdeck import paths
from swarmdeck.actions.admission import Interrupted, JobRow, Moved, NotAdmittedError, admit
from swarmdeck.actions.booking import (
    OOM_ADJ_OUTGROWN,
    OOM_ADJ_UNBOUNDED,
    SETTLING,
    Booking,
    Via,
    decide_booking,
    hit_ceiling,
    lighter_booking,
    mib_ceil,
    peak_time,
    settled_booking,
    settled_size,
)
from swarmdeck.actions.cage import Backend, Cage, CageError, open_backend
from swarmdeck.actions.cage.slice_claim import claim_slice, private_ledger_warning
from swarmdeck.actions.doorbell import ring
from swarmdeck.actions.fingerprint import fingerprint
from swarmdeck.actions.jobrecord import (
    NOTHING_SHOWN,
    Ending,
    family_runs,
    folder_runs,
    folder_shows,
    mark_running,
    past_runs,
    record_end,
    timing_runs,
)
from swarmdeck.actions.jobwatch import OOM, SIGNALLED, TIMEOUT, StopSignals, Watched, watch
from swarmdeck.actions.oom import (
    SLICE_FULL_OVER_BOOKING,
    OomVerdict,
    classify_oom,
    outgrew_booking,
)
from swarmdeck.actions.parent_death import die_with_parent
from swarmdeck.actions.peer_hint import PeerHint
from swarmdeck.actions.run_request import (
    RESULT_ENV,
    WORKLOAD_ENV,
    RunRequest,
    checked_cap,
    checked_seconds,
    checked_threads,
)
from swarmdeck.actions.spawn import CannotEnter, SetupFailed, spawn
from swarmdeck.breaks import broken
from swarmdeck.errors import StateError, UsageError
from swarmdeck.exitcodes import ExitCode
from swarmdeck.probes.machine import local_host_name, mem_total
from swarmdeck.probes.memory_book import SliceFacts, reserve_problem, slice_cap_of
from swarmdeck.probes.procs import ProcessIdentity, own_file, own_identity, start_ticks
from swarmdeck.run_scope import SCOPE_KEPT, SCOPE_VARIABLE
from swarmdeck.sizes import SizeSpec, exact_size, format_size

if TYPE_CHECKING:
    from collections.abc import Callable

    from swarmdeck.actions.booking import PastRun
    from swarmdeck.actions.detach import Detached, JobOutput
    from swarmdeck.config import Config
    from swarmdeck.state import StateStore

SERIAL_FILE_ENV = "SWARMDECK_SERIAL_FILE"
"""Set for the job: the file to write "serial right now: REASON" into (probes/usage.py reads it)."""


def say(line: str) -> None:
    """A runner message: one line on stderr, marked as swarmdeck's, not the command's."""
    print(f"swarmdeck: {line}", file=sys.stderr, flush=True)


def parse_cap(text: str | None, total: int) -> int | None:
    """--cap as bytes; a percentage is of MemTotal."""
    if text is None:
        return None
    return checked_cap(text, SizeSpec.parse(text).resolve(total))


def check_request(request: RunRequest) -> None:
    """Refuse, as a usage error (251), a request that cannot be run as written."""
    if not request.argv or not request.argv[0]:
        raise UsageError("run: no command given: put it after --, like: swarmdeck run -- make test")
    if request.unbounded and request.cap is not None:
        raise UsageError(
            f"--unbounded and --cap {request.cap} contradict each other: --unbounded lets the job "
            "grow to the whole slice; give one of them"
        )
    checked_threads(request.threads)
    checked_seconds("--wait", request.wait, zero_ok=True)
    checked_seconds("--timeout", request.timeout, zero_ok=False)


def threads_warning(threads: int | None, budget: int) -> str:
    """The line saying that `--threads` asks for more threads than the host's heavy-thread
    budget (cores.heavy_threads, else its cores less one: the B of the Hosts panel's `threads
    free A/B`): the job runs, its threads share the cores; "" when it asks for no more."""
    if threads is None or threads <= budget:
        return ""
    return (
        f"--threads {threads} is more than this host's heavy-thread budget of {budget}"
        f" (cores.heavy_threads, else its cores less one): the job runs, but its threads share"
        f" the cores and each runs slower, and the Hosts panel reads threads free 0/{budget}"
        f" ({threads - budget} over) while it runs; declare at most {budget}, or run it on a"
        " bigger host"
    )


def job_label(request: RunRequest) -> str:
    if request.label:
        return request.label
    return " ".join([PurePosixPath(request.argv[0]).name, *request.argv[1:]])[:60]


def signal_name(signum: int) -> str:
    """SIGTERM for 15: the name a job's ending is told by, in its row and to the person."""
    return signal.Signals(signum).name


def exit_and_outcome(
    watched: Watched, verdict: OomVerdict, *, outgrew: bool = False
) -> tuple[int, str]:
    """The runner's exit code and the ledger's outcome for a job that ran; `outgrew`, its peak
    passed its booking, which a slice-full outcome then says."""
    if verdict is OomVerdict.SLICE_FULL and outgrew:
        return int(ExitCode.SLICE_FULL), SLICE_FULL_OVER_BOOKING
    if verdict is not OomVerdict.NONE:
        assert verdict.exit_code is not None
        return int(verdict.exit_code), verdict.value
    if watched.ended_by == TIMEOUT:
        return int(ExitCode.TIMED_OUT), "timed out"
    if watched.ended_by == SIGNALLED and watched.signum is not None:
        return 128 + watched.signum, f"stopped: runner got {signal_name(watched.signum)}"
    code = watched.returncode
    if code < 0:
        return 128 - code, f"killed by {signal_name(-code)}"
    return code, "ok" if code == 0 else f"exit {code}"


def verdict_line(
    job_id: int, code: int, booking: Booking, peak: int, slice_cap: int
) -> str | None:
    """What the person reads when swarmdeck, not the command, decided the exit code."""
    if code == ExitCode.OWN_CAP:
        return (
            f"job {job_id} hit its own memory cap of {format_size(booking.cap)} (exit 250); "
            "the next run books its cap: rerun with a larger --cap if it needs more"
        )
    if code == ExitCode.SLICE_FULL:
        return slice_full_line(job_id, booking, peak, slice_cap)
    if code == ExitCode.TIMED_OUT:
        return f"job {job_id} timed out (exit 253); its whole process tree was stopped"
    return None


def slice_full_line(job_id: int, booking: Booking, peak: int, slice_cap: int) -> str:
    """The 254 line: not the job's fault only when it kept to its booking; when it grew past
    it, the rerun that books what it took (its peak is what it had reached when killed: it
    may need more), or a slice with room for that."""
    killed = (
        f"job {job_id} was killed because the shared slice ({format_size(slice_cap)}) was full"
        " (exit 254)"
    )
    figures = f"(booked {format_size(booking.booked)}, peak {format_size(peak)})"
    if not outgrew_booking(peak, booking.booked):
        return f"{killed}; it stayed within its booking {figures}: not its fault, rerun it"
    cap = f"--cap {fitting_cap(peak)} or more"
    if booking.oom_score_adj == OOM_ADJ_UNBOUNDED:
        cap += " in place of --unbounded"
    return (
        f"{killed}, and it grew past its booking {figures}: a rerun on the same booking meets"
        f" the same kill; rerun it with {cap}, so it is booked what it takes, or when the slice"
        " has room for that"
    )


def fitting_cap(peak: int) -> str:
    """The --cap that books what a job took that grew past its booking: its peak in whole MiB,
    as text that parses back to exactly that; what its 254 line names, and its rerun's form."""
    return exact_size(mib_ceil(peak))


def serial_marker(job_id: int) -> str:
    """The file the job may name a serial phase in ($SWARMDECK_SERIAL_FILE), beside its output.

    The runner only names it; the job creates it when it has something to say.
    """
    folder = os.path.join(paths.state_dir(), "jobs")
    os.makedirs(folder, exist_ok=True)
    return f"{folder}/job-{job_id}.serial"


class ChildSetup:
    """What runs in the child between fork and exec: join the cage, set OOM standing, and die
    with the runner (a job must not outlive a runner that was killed outright)."""

    def __init__(self, cage: Cage, oom_score_adj: int) -> None:
        self.cage = cage
        self.adj = str(oom_score_adj).encode()
        self.adj_file = own_file("oom_score_adj")
        self.runner_pid = os.getpid()

    def __call__(self) -> None:
        self.cage.join()
        try:
            fd = os.open(self.adj_file, os.O_WRONLY)
            try:
                os.write(fd, self.adj)
            finally:
                os.close(fd)
        except PermissionError:
            # Lowering below the inherited value needs privilege; keeping the higher value only
            # makes this job the likelier OOM victim, which is the safe side.
            pass
        die_with_parent(signal.SIGKILL)
        if os.getppid() != self.runner_pid:
            os._exit(128 + signal.SIGKILL)


@dataclass
class Prepared:
    """Everything decided before admission."""

    backend: Backend
    facts: SliceFacts
    booking: Booking
    fingerprint: str
    host: str
    result_file: str | None = None
    """Where a peer run's driver wants the run's peak written (RESULT_ENV); None otherwise."""
    own_peak: int = 0
    """The largest peak of the workload's recent runs (0: it has none): a settled booking
    never goes under it (booking.settled_booking)."""


def handed_by_driver() -> tuple[str | None, str | None]:
    """The workload fingerprint and result file a peer run's driver handed this runner, taken
    out of the environment so the job, and a `swarmdeck run` inside it, does not inherit them."""
    return os.environ.pop(WORKLOAD_ENV, None) or None, os.environ.pop(RESULT_ENV, None) or None


def write_result(path: str, cap: int, ending: Ending) -> None:
    """The run's peak for the driver that started it from another host (actions/hosts/ssh.py
    reads it back); a file that cannot be written loses only what the driver learns."""
    import json

    text = json.dumps({
        "peak": ending.peak, "cap": cap, "hit_ceiling": ending.hit_ceiling,
        "duration": ending.duration,
    })
    try:
        with open(path, "w", encoding="utf-8") as out:
            out.write(text + "\n")
    except OSError as error:
        say(f"the run's peak was not handed back to its driver: {error.strerror}")


def prepare(
    config: Config, store: StateStore, request: RunRequest, note: Callable[[str], None] = say
) -> Prepared:
    """Check the request, find the cage backend and the slice, and decide the booking; `note`
    is given what the person should know about the slice's owner."""
    check_request(request)
    for warning in (
        threads_warning(request.threads, _declared_threads(config, None)),
        private_ledger_warning(config.memory.slice, os.path.dirname(store.path)),
    ):
        if warning:
            note(warning)
    total = mem_total()
    declared = parse_cap(request.cap, total)
    no_slice = reserve_problem(config, total)
    if no_slice:
        raise CageError(no_slice)
    backend = open_backend(config.memory.slice)
    slice_cap = slice_cap_of(config, total)
    claim_slice(backend, store.path, config.path, slice_cap, note)
    facts = SliceFacts(
        slice_cap=slice_cap,
        margin=config.memory.margin.resolve(total),
        backend=backend.kind,
        slice_path=backend.slice_path,
        placement=backend.site.placement,
        problem="",
    )
    given, result_file = handed_by_driver()
    workload = given or fingerprint(request.argv, request.cwd)
    history = past_runs(store, workload)
    family = () if history else family_runs(store, list(request.argv), request.cwd)
    shown = folder_shows(store, request.cwd, workload) if len(history) == 1 else NOTHING_SHOWN
    booking = decide_booking(
        history,
        declared_cap=declared,
        default_prediction=config.memory.default_prediction.resolve(total),
        cap_factor=config.memory.cap_factor,
        unbounded=request.unbounded,
        slice_cap=slice_cap,
        family=family,
        folder=() if history or family or not declared else folder_runs(store, request.cwd),
        spread=shown.spread,
        growth_step=shown.growth,
    )
    return Prepared(backend, facts, booking, workload, local_host_name(), result_file,
                    own_peak=max((past.peak for past in history), default=0))


@dataclass
class RunContext:
    """One run as it goes, handed from step to step: what was asked, what was decided before
    admission, how the runner is told to stop, and where its messages go."""

    config: Config
    store: StateStore
    request: RunRequest
    prepared: Prepared
    signals: StopSignals
    note: Callable[[str], None]
    detached: Detached | None = None
    """The channel to a --detach launcher waiting for the job id; None when not detached."""


def rebook(run: RunContext, family: list[PastRun] | None = None) -> Booking | None:
    """While queued or running on a booking of fiction (its declared cap or the default
    prediction: no history of its own), the booking its family's runs (`family` where the
    caller read them already), or failing them its folder's capped runs, give now, if any
    have ended since it was prepared; while queued on the prediction of a single run, the
    booking the folder's spread and growth give now (booking.folder_spread,
    booking.folder_growth). None to keep the booking it has."""
    prepared, request = run.prepared, run.request
    if request.unbounded:
        return None
    if prepared.booking.via is Via.HISTORY:
        return _rebook_single_run(run)
    if prepared.booking.via not in (Via.CAP, Via.DEFAULT):
        return None
    total = mem_total()
    declared = parse_cap(request.cap, total)
    if family is None:
        family = family_runs(run.store, list(request.argv), request.cwd)
    folder = () if family or declared is None else folder_runs(run.store, request.cwd)
    if not family and not folder:
        return None
    booking = decide_booking(
        past_runs(run.store, prepared.fingerprint),
        declared_cap=declared,
        default_prediction=run.config.memory.default_prediction.resolve(total),
        cap_factor=run.config.memory.cap_factor,
        unbounded=False,
        slice_cap=prepared.facts.slice_cap,
        family=family,
        folder=folder,
    )
    return booking if booking.via in (Via.FAMILY, Via.FOLDER) else None


def _rebook_single_run(run: RunContext) -> Booking | None:
    """The booking of a workload with a single run, from the margin its folder's spread and
    the growth its folder's workloads all showed give now, when that differs from the booking
    it was prepared with (less where the folder's runs repeat closely, more where they all
    grew: a job of a drifting folder queued behind those that grew books their growth before it
    grows past its booking too); None otherwise."""
    prepared, request = run.prepared, run.request
    history = past_runs(run.store, prepared.fingerprint)
    if len(history) != 1:
        return None
    shown = folder_shows(run.store, request.cwd, prepared.fingerprint)
    if shown == NOTHING_SHOWN:
        return None
    total = mem_total()
    booking = decide_booking(
        history,
        declared_cap=parse_cap(request.cap, total),
        default_prediction=run.config.memory.default_prediction.resolve(total),
        cap_factor=run.config.memory.cap_factor,
        unbounded=False,
        slice_cap=prepared.facts.slice_cap,
        spread=shown.spread,
        growth_step=shown.growth,
    )
    return booking if booking.booked != prepared.booking.booked else None


def run_job(
    config: Config, store: StateStore, request: RunRequest, note: Callable[[str], None] = say
) -> int:
    """Run one job through admission and its cage; returns the exit code of the contract."""
    detached: Detached | None = None
    if request.detach:
        from swarmdeck.actions.detach import detached_channel, launch_detached

        detached = detached_channel()
        if detached is None:
            prepare(config, store, request, note)
            return launch_detached(request)
    try:
        prepared = prepare(config, store, request, note)
    except CageError:
        if broken("no-cage-fallback"):
            import subprocess

            return subprocess.run(request.argv, cwd=request.cwd, check=False).returncode
        raise
    signals = StopSignals()
    signals.install()
    try:
        return _admitted_run(RunContext(config, store, request, prepared, signals, note, detached))
    finally:
        signals.restore()


def _admitted_run(run: RunContext) -> int:
    request, prepared = run.request, run.prepared
    booking = prepared.booking
    row = JobRow(
        label=job_label(request),
        host=prepared.host,
        fingerprint=prepared.fingerprint,
        argv=list(request.argv),
        cwd=request.cwd,
        runner=own_identity(),
        booking=booking,
        threads=_declared_threads(run.config, request.threads),
        detached=request.detach,
        timeout=request.timeout,
        declared_cap=request.cap or "",
        scope=_scope_declaration(),
    )
    wait = request.wait if request.wait is not None else run.config.memory.admission_wait
    queued_note = PeerHint(
        run.config, run.store, request, row.label, booking, prepared.fingerprint, run.note
    )
    try:
        admission = admit(
            run.store, row, prepared.facts, prepared.backend.job_path, wait, queued_note,
            run.signals.read_fd, run.signals.pending, lambda: rebook(run),
        )
    except NotAdmittedError as error:
        run.note(error.message)
        queued_note.offer()
        return int(error.exit_code)
    except Interrupted as error:
        run.note(error.message)
        return 128 + error.signum
    except Moved as error:
        run.note(error.message)
        return int(error.exit_code)
    job_id = admission.job_id
    if admission.booking is not None:
        prepared.booking = admission.booking
    try:
        output = run.detached.output(job_id) if run.detached is not None else None
    except StateError as error:
        return _never_ran(run, job_id, error.message, int(error.exit_code))
    try:
        return _caged_run(run, job_id, output)
    finally:
        if output is not None and not output.handed_over:
            output.discard()
        # Its booking is given back and its cage is gone: wake the queued runners now.
        ring(str(run.store.path))


def _caged_run(run: RunContext, job_id: int, output: JobOutput | None) -> int:
    try:
        cage = run.prepared.backend.create_cage(job_id, run.prepared.booking.cap)
    except CageError as error:
        return _never_ran(run, job_id, error.message, int(error.exit_code))
    try:
        return _run_in_cage(run, job_id, cage, output)
    finally:
        try:
            cage.remove()
        except CageError as error:
            run.note(f"job {job_id}: {error.message}")


def _never_ran(run: RunContext, job_id: int, message: str, code: int) -> int:
    run.note(message)
    ending = Ending(code, message, None, None, False, None)
    record_end(run.store, job_id, run.prepared.fingerprint, run.prepared.booking.cap, ending)
    return code


def _not_started(request: RunRequest, error: OSError) -> tuple[str, int]:
    """Why exec or the change into the job's folder failed, and the exit code a shell gives."""
    if isinstance(error, CannotEnter):
        why = f"cannot start in {request.cwd}: {error.strerror}; nothing was run"
        return why, ExitCode.CANNOT_EXECUTE
    if isinstance(error, FileNotFoundError):
        return f"{request.argv[0]}: command not found", ExitCode.NOT_FOUND
    if isinstance(error, PermissionError):
        if "/" in request.argv[0] and os.path.isdir(os.path.join(request.cwd, request.argv[0])):
            import errno

            # exec refuses a folder with EACCES; a shell says what it is instead.
            return f"{request.argv[0]}: {os.strerror(errno.EISDIR)}", ExitCode.CANNOT_EXECUTE
        return f"{request.argv[0]}: permission denied", ExitCode.CANNOT_EXECUTE
    return f"{request.argv[0]}: cannot execute: {error.strerror}", ExitCode.CANNOT_EXECUTE


def _run_in_cage(run: RunContext, job_id: int, cage: Cage, output: JobOutput | None) -> int:
    """Start the job in its cage and see it to its end. A detached job's launcher is told only
    once the job started, so a command that cannot start is reported at the terminal."""
    config, store, request, prepared = run.config, run.store, run.request, run.prepared
    booking = prepared.booking
    marker = serial_marker(job_id)
    cage.before_start()
    try:
        proc = spawn(
            cage.command(request.argv),
            cwd=str(request.cwd),
            env={**os.environ, SERIAL_FILE_ENV: str(marker)},
            setup=ChildSetup(cage, booking.oom_score_adj),
            streams=output.streams if output is not None else None,
        )
    except OSError as error:
        return _never_ran(run, job_id, *_not_started(request, error))
    except SetupFailed as error:
        return _never_ran(
            run, job_id,
            f"could not put the job into its cage {cage.path} ({error}); nothing was run",
            int(ExitCode.USAGE),
        )
    if run.detached is not None and output is not None:
        run.detached.started(job_id, output)
    ticks = start_ticks(proc.pid)
    assert ticks is not None, "an unreaped child always has a stat line"
    job = ProcessIdentity(proc.pid, ticks)
    cage.after_start(proc.pid)
    try:
        mark_running(store, job_id, job, str(output.path) if output else None, marker)
    except StateError as error:
        # The job runs on in its cage (the admitted row names it); only its pid is unrecorded.
        run.note(f"job {job_id}: not marked running: {error.message}")
    watched = watch(
        proc, job, cage, request.timeout, config.memory.sample_interval, run.signals,
        request.grace, outgrown=_outgrown(store, job_id, booking, cage),
        lighten=_lighten(run, job_id, cage),
    )
    booking = prepared.booking
    try:  # noqa: SIM105 (contextlib stays off the run path: its import costs every run)
        os.unlink(marker)
    except OSError:
        # None was made (the usual case), or it cannot be removed: only read while the row
        # says running, so a marker left behind is harmless.
        pass
    verdict = classify_oom(cage.evidence()) if watched.ended_by == OOM else OomVerdict.NONE
    if verdict is not OomVerdict.NONE and broken("no-oom-verdict"):
        verdict = OomVerdict.NONE
    reading = cage.reading()
    kernel_peak = reading.peak if reading else None
    estimate = max(0, kernel_peak - reading.inactive_file) if reading and kernel_peak else 0
    peak = max(watched.working_set_peak, estimate)
    code, outcome = exit_and_outcome(
        watched, verdict, outgrew=outgrew_booking(peak, booking.booked)
    )
    ending = Ending(
        exit_code=code,
        outcome=outcome,
        peak=peak,
        kernel_peak=kernel_peak,
        hit_ceiling=hit_ceiling(
            peak, booking.cap, verdict is OomVerdict.OWN_CAP,
            squeezed_over_booking=outcome == SLICE_FULL_OVER_BOOKING,
        ),
        duration=watched.duration,
        peak_at=peak_time(peak, watched.working_set_peak, watched.peak_at),
    )
    try:
        record_end(store, job_id, prepared.fingerprint, booking.cap, ending)
    except StateError as error:
        # The job's own exit code still tells the caller how it ended; the row is found lost.
        run.note(f"job {job_id} ended ({outcome}) but was not recorded: {error.message}")
    if prepared.result_file:
        write_result(prepared.result_file, booking.cap, ending)
    line = verdict_line(job_id, code, booking, peak, prepared.facts.slice_cap)
    if line:
        run.note(line)
    if code in (ExitCode.OWN_CAP, ExitCode.SLICE_FULL) and line:
        memory_kill_alert(store, job_id, prepared.host, line)
    return code


def _outgrown(
    store: StateStore, job_id: int, booking: Booking, cage: Cage
) -> tuple[int, Callable[[], None]] | None:
    """What the watch does once the job's working set passes its booking: its cage's processes
    take the standing of one that may take what nobody booked (actions/standing.py), so a full
    slice kills it before a job that kept to its booking, and its row says so; None for a job
    that stands there already."""
    if booking.oom_score_adj >= OOM_ADJ_OUTGROWN:
        return None

    def stand() -> None:
        from swarmdeck.actions.standing import raise_standing
        from swarmdeck.ledger import set_oom_score_adj

        raise_standing(cage.members, OOM_ADJ_OUTGROWN)
        try:
            with store.transaction() as conn:
                set_oom_score_adj(conn, job_id, OOM_ADJ_OUTGROWN)
        except StateError as error:
            # The kernel's standing is what decides; only the row's figure is behind.
            say(f"job {job_id}: its standing of {OOM_ADJ_OUTGROWN} was not recorded: "
                f"{error.message}")

    return booking.booked, stand


LOOK_EVERY = 1.0
"""Seconds between a running job's looks at what its runs, or its family's or folder's, book
it now."""


def _lighten(
    run: RunContext, job_id: int, cage: Cage
) -> Callable[[int, float, float], int | None] | None:
    """What the watch asks of a running job booked on anything but a ceiling (booking.SETTLING),
    at most once every LOOK_EVERY seconds: whether it books less now. A job of fiction (its
    cap or the default prediction) books what its family's or folder's runs give a job like
    it, once they first give a booking (booking.lighter_booking); any of them books its
    working set once the runs show it has reached its peak (booking.settled_booking), never
    under its own runs' largest peak, and then asks no more. When it books less, its
    processes first stand where a prediction stands, then its row books less and the queued
    runners are woken to the room it gave back (issue 34: the first jobs of a day held their
    caps, 2–6× what they took, to their end). None for an unbounded job or one booked on its
    ceiling."""
    if run.request.unbounded or run.prepared.booking.via not in SETTLING:
        return None
    next_look = time.monotonic() + LOOK_EVERY
    prior_to_come = run.prepared.booking.via in (Via.CAP, Via.DEFAULT)
    least = run.prepared.own_peak

    def lighten(peak: int, elapsed: float, rose_at: float) -> int | None:
        nonlocal next_look, prior_to_come
        if time.monotonic() < next_look:
            return None
        next_look = time.monotonic() + LOOK_EVERY
        held = run.prepared.booking
        if not prior_to_come and settled_size(peak, least) >= held.booked:
            # Its working set only grows: settling can never book it less (a job booked
            # on its folder's spread already holds the same 2 %), so it reads no more.
            next_look = math.inf
            return None
        try:
            # The runs are read first, once for both rules: a store that cannot be read
            # leaves the booking whole.
            family = family_runs(run.store, list(run.request.argv), run.request.cwd)
            runs = timing_runs(run.store, run.request.cwd, family)
            lighter = None
            if prior_to_come:
                fresh = rebook(run, family)
                # A prior, once given, is the largest of their recent runs, which more runs
                # seldom lower: it is not asked again.
                prior_to_come = fresh is None
                lighter = lighter_booking(held, fresh, peak)
            settled = settled_booking(lighter or held, runs, elapsed, peak, rose_at, least)
            if settled is not None:
                lighter, next_look = settled, math.inf
            if lighter is None:
                return None
            from swarmdeck.actions.standing import raise_standing
            from swarmdeck.ledger import lower_booking

            raise_standing(cage.members, lighter.oom_score_adj)
            with run.store.transaction() as conn:
                if not lower_booking(conn, job_id, lighter.booked, lighter.via.value,
                                     lighter.oom_score_adj):
                    return None
        except StateError as error:
            # It keeps the booking it holds, the safe side, and asks no more.
            next_look = math.inf
            run.note(f"job {job_id}: keeps its booking of {format_size(held.booked)}: "
                     f"{error.message}")
            return None
        run.prepared.booking = lighter
        ring(str(run.store.path))
        shown = ("its working set has stayed at its peak past when its runs reached theirs"
                 if lighter.via is Via.SETTLED else f"its {lighter.via.value}'s runs show")
        run.note(f"job {job_id}: books {format_size(lighter.booked)} now, not "
                 f"{format_size(held.booked)}, as {shown}")
        return lighter.booked

    return lighten


def memory_kill_alert(store: StateStore, job_id: int, host: str, line: str) -> None:
    """A job the memory cage ended (250, 254) raises an alert beside its exit code, so the
    person (and a session's `watch --wake`) learns of it, not only the agent that ran it."""
    from swarmdeck.actions.alerts import raise_alert
    from swarmdeck.actions.jobrecord import SESSION_ENV
    from swarmdeck.state import now

    session = os.environ.get(SESSION_ENV)
    message = f"{line} (session {session})" if session else line
    try:
        with store.transaction() as conn:
            raise_alert(conn, f"memory_kill:job{job_id}", "warning", "runner", host, message,
                        now())
    except StateError as error:
        # The exit code and the job's row already say how it ended; only the alert is missing.
        say(f"job {job_id}: no alert raised: {error.message}")


def _scope_declaration() -> str:
    """The run-scope declaration this run was started with (`SWARMDECK_SCOPE='…' swarmdeck run
    -- CMD`, the run-scope guard's form), kept with the job; "" when none was."""
    return os.environ.get(SCOPE_VARIABLE, "")[:SCOPE_KEPT]


def _declared_threads(config: Config, given: int | None) -> int:
    """`--threads` as given, else this host's heavy threads (config.heavy_thread_budget): a run
    that says nothing is booked as one that may use them all."""
    from swarmdeck.config import heavy_thread_budget

    if given is not None:
        return given
    return heavy_thread_budget(config.cores.heavy_threads, os.cpu_count() or 1)
