"""Admission: a job takes room on the memory book only inside one write transaction.

Each attempt is one `BEGIN IMMEDIATE` transaction that marks jobs of dead runners lost, reads
the book and writes the job's row (admitted, queued or refused) before it commits, so two
runners can never both take the same room. What a lost job left in its cage is cleared right
after the attempt that found it, whatever this job's own answer. Waiting re-checks until
--wait runs out.
"""

from __future__ import annotations

import json
import os
import select
import sqlite3
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from swarmdeck.actions.backfill import (
    Holder,
    Queued,
    Running,
    Spot,
    Waiter,
    holder_end,
    holder_sure_end,
    may_start,
    order_as_of_change,
    queue_plan,
    waiter_run,
)
from swarmdeck.actions.booking import HISTORY_WINDOW, Booking, Decision, decide_admission
from swarmdeck.actions.doorbell import Doorbell, ring
from swarmdeck.actions.reconcile import LostJob, clear_lost, mark_lost_jobs
from swarmdeck.breaks import broken
from swarmdeck.errors import StateError, SwarmdeckError
from swarmdeck.exitcodes import ExitCode
from swarmdeck.file_lock import take_within
from swarmdeck.ledger import (
    add_job,
    admit_queued_as_booked,
    close_job,
    job_row,
    queued_rows,
    rebook_queued,
    set_cgroup,
)
from swarmdeck.ledger.schema import ADMITTED, MOVED, QUEUED, REFUSED, RUNNING
from swarmdeck.probes.machine import read_meminfo
from swarmdeck.probes.memory_book import MemoryBook, SliceFacts, read_book
from swarmdeck.probes.procs import ProcessIdentity
from swarmdeck.sizes import format_size
from swarmdeck.state import MAKE_WRITABLE, now

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from os import PathLike

    from swarmdeck.probes.memory_book import LedgerJob
    from swarmdeck.state import StateStore

RECHECK_INTERVAL = 0.2
"""Seconds before the first re-check while queued; each wait after it is longer."""
RECHECK_MAX = 2.0
"""The longest pause between re-checks, so many queued runners do not keep the file busy."""
QUEUED_LINE_EVERY = 60.0
"""Seconds between "queued: needs X, room Y" lines."""
TURN_WAIT = 30.0
"""Seconds a runner waits for its turn at admission; each turn lasts one short transaction."""
TURN_POLL_MIN = 0.001
TURN_POLL_MAX = 0.02


class NotAdmittedError(SwarmdeckError):
    """The job never fits, or waited past --wait: exit 252, nothing ran."""

    exit_code = ExitCode.NOT_ADMITTED


class Interrupted(SwarmdeckError):
    """The runner was told to stop (TERM/INT/HUP) before the job started: exit 128 + signal."""

    def __init__(self, message: str, signum: int) -> None:
        super().__init__(message)
        self.signum = signum


class Moved(SwarmdeckError):
    """The queued row was moved to another host (actions/migration.py): exit 242, nothing ran
    here; the message says where it runs."""

    exit_code = ExitCode.MOVED


def _moved(conn: sqlite3.Connection, job_id: int) -> None:
    """Raise Moved when the job's row says it moved to another host."""
    row = job_row(conn, job_id)
    if row is not None and row["state"] == MOVED:
        raise Moved(f"job {job_id} {row['outcome'] or 'moved'}: it runs there; nothing ran here")


@dataclass(frozen=True)
class JobRow:
    """What the ledger row says about a job before it is admitted."""

    label: str
    host: str
    fingerprint: str
    argv: list[str]
    cwd: str
    runner: ProcessIdentity
    booking: Booking
    threads: int | None
    detached: bool
    timeout: float | None
    declared_cap: str = ""
    """The `--cap` as it was given; "" when none was."""
    scope: str = ""
    """The run-scope declaration (SWARMDECK_SCOPE) it was started with; "" when none was."""


@dataclass(frozen=True)
class Admission:
    """The result of admission: the job's row id and the book it was admitted against."""

    job_id: int
    book: MemoryBook
    booking: Booking | None = None
    """The booking it was admitted on, when a re-booking while queued changed it."""


def rebooked(job: JobRow, booking: Booking) -> JobRow:
    """The same job row on another booking."""
    return JobRow(
        label=job.label, host=job.host, fingerprint=job.fingerprint, argv=job.argv,
        cwd=job.cwd, runner=job.runner, booking=booking, threads=job.threads,
        detached=job.detached, timeout=job.timeout, declared_cap=job.declared_cap,
        scope=job.scope,
    )


def room_line(booked: int, book: MemoryBook) -> str:
    return f"needs {format_size(booked)}, room {format_size(max(0, book.usable))}"


def _insert(conn: sqlite3.Connection, job: JobRow, state: str, at: float) -> int:
    booking = job.booking
    refused = state == REFUSED
    return add_job(conn, {
        "label": job.label, "host": job.host, "fingerprint": job.fingerprint,
        "argv": json.dumps(job.argv), "cwd": str(job.cwd), "state": state,
        "runner_pid": job.runner.pid, "runner_start_ticks": job.runner.start_ticks,
        "booked": booking.booked, "cap": booking.cap, "admitted_via": booking.via.value,
        "oom_score_adj": booking.oom_score_adj, "threads": job.threads,
        "detached": int(job.detached), "timeout": job.timeout,
        "declared_cap": job.declared_cap, "scope": job.scope or None, "created_at": at,
        "admitted_at": at if state == ADMITTED else None,
        "exit_code": ExitCode.NOT_ADMITTED if refused else None,
        "outcome": "never fits" if refused else None,
        "ended_at": at if refused else None,
    })


def _no_signal() -> int | None:
    return None


def admission_turn(
    db: PathLike[str] | str,
    wakeup_fd: int | None = None,
    stop_signal: Callable[[], int | None] = _no_signal,
) -> _AdmissionTurn:
    """Runners deciding at once take turns on a file lock beside the state file.

    The write transaction alone is what makes a decision safe; this lock only makes waiters
    take turns instead of polling SQLite's busy handler with growing sleeps. A turn lasts one
    decision, so the wait for it is bounded (TURN_WAIT, then 252) and a stop signal ends it at
    once (Interrupted): a process sitting on the lock can delay a runner, never freeze it.
    """
    return _AdmissionTurn(f"{db}.admission", wakeup_fd, stop_signal)


class _AdmissionTurn:
    """The turn `admission_turn` waits for, held from `with` to its end: a context manager of
    its own, not contextlib's, whose import every caged run would pay."""

    def __init__(
        self, name: str, wakeup_fd: int | None, stop_signal: Callable[[], int | None]
    ) -> None:
        self._name = name
        self._wakeup_fd = wakeup_fd
        self._stop_signal = stop_signal
        self._fd = -1

    def __enter__(self) -> None:
        flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW
        try:
            fd = os.open(self._name, flags, 0o600)
        except OSError as error:
            raise StateError(
                f"the admission lock {self._name} cannot be opened ({error.strerror}); nothing"
                f" ran: {MAKE_WRITABLE}"
            ) from None
        try:
            _take_turn(fd, self._name, self._wakeup_fd, self._stop_signal)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd

    def __exit__(self, *_raised: object) -> bool:
        os.close(self._fd)
        return False


def _take_turn(
    fd: int, name: str, wakeup_fd: int | None, stop_signal: Callable[[], int | None]
) -> None:
    def pause(seconds: float) -> None:
        signum = stop_signal()
        if signum is not None:
            raise Interrupted("stopped while waiting for its turn at admission", signum)
        if wakeup_fd is not None:
            select.select([wakeup_fd], [], [], seconds)
        else:
            time.sleep(seconds)

    if not take_within(fd, TURN_WAIT, pause, TURN_POLL_MIN, TURN_POLL_MAX):
        raise NotAdmittedError(
            f"the admission lock {name} was held by another process for over"
            f" {TURN_WAIT:g} s; nothing ran: find who holds it with `fuser {name}`"
        )


@dataclass(frozen=True)
class QueueView:
    """The queue as one attempt sees it."""

    ahead: list[sqlite3.Row]
    """The jobs queued on this host ahead of this one, in the queue's order."""
    spans: dict[str, tuple[float, float]]
    """The learned run times of those, of this job and of the running jobs."""
    holders: list[Holder]
    """The running jobs, each at its earliest end."""
    sure: list[Holder]
    """The same jobs, each at the time by which it has surely ended."""


def queue_ahead(
    conn: sqlite3.Connection, job: JobRow, job_id: int | None, book: MemoryBook
) -> QueueView:
    """The queue ahead of this job (backfill.order_as_of_change: arrival, jobs that arrive
    together in the order their learned run times say ends soonest; a new job's row is not
    written yet and arrives now). The orders are played forward only where the job fits now:
    otherwise it waits whatever is ahead of it, and the first order says what is."""
    rows = queued_rows(conn, job.host)
    queued = [row for row in rows if row["id"] != job_id]
    if not queued:
        return QueueView([], {}, [], [])
    spans = durations(conn, {job.fingerprint} | {row["fingerprint"] for row in queued}
                      | {held.fingerprint for held in book.jobs})
    holders, sure, running = running_ends(book.jobs, spans, now())

    def entry(created_at: float, booked: int, fingerprint: str | None, row_id: int | None
              ) -> Queued:
        return Queued(created_at, booked, spans.get(fingerprint or "", (None, None))[1], row_id)

    own_at = next((row["created_at"] for row in rows if row["id"] == job_id), now())
    everyone = [
        *(entry(row["created_at"], row["booked"] or 0, row["fingerprint"], row["id"])
          for row in queued),
        entry(own_at, job.booking.booked, job.fingerprint, job_id),
    ]
    order = order_as_of_change(everyone, running, book.slice_cap,
                               plan=job.booking.booked <= book.usable)
    ahead = [queued[place] for place in order[:order.index(len(queued))]]
    return QueueView(ahead, spans, holders, sure)


def running_ends(
    jobs: Sequence[LedgerJob], spans: dict[str, tuple[float, float]], clock: float
) -> tuple[list[Holder], list[Holder], list[Running]]:
    """The jobs holding a booking at `clock`, each at its earliest end and at its sure end
    from its learned run times (`spans`), and as the queue's order sees it."""
    holders, sure, running = [], [], []
    for held in jobs:
        began = held.started_at or held.admitted_at or clock
        shortest, longest = spans.get(held.fingerprint or "", (None, None))
        frees = max(held.booked or 0, held.current or 0)
        holders.append(Holder(frees, holder_end(clock - began, shortest)))
        sure.append(Holder(frees, holder_sure_end(clock - began, longest)))
        running.append(Running(held.booked or 0, began, shortest))
    return holders, sure, running


def attempt(
    store: StateStore,
    job: JobRow,
    facts: SliceFacts,
    job_id: int | None,
    cage_path: Callable[[int], str],
    wakeup_fd: int | None = None,
    stop_signal: Callable[[], int | None] = _no_signal,
) -> tuple[Decision, int, MemoryBook, list[LostJob]]:
    """One admission attempt in one write transaction; writes or updates the job's row, or
    raises Moved when the queued row was moved to another host meanwhile.

    An admitted row names its cage at once, so a runner dying before the cage is even made
    still leaves a row that says where to clean up.
    """
    # The machine's meminfo, as a snapshot reads it: before the jobs' cages and the slice. Read
    # before the turn, the kernel's generating and parsing it is not spent while every
    # other runner waits.
    meminfo = read_meminfo()
    if broken("no-admission-lock"):
        return _unlocked_attempt(store, job, facts, job_id, cage_path, meminfo)
    with admission_turn(store.path, wakeup_fd, stop_signal), store.transaction() as conn:
        if job_id is not None:
            # A queued row may have been moved to another host meanwhile: it must not start
            # here too.
            _moved(conn, job_id)
            # Its row takes the booking it decides on, which every other runner reads.
            booking = job.booking
            rebook_queued(conn, job_id, booking.booked, booking.cap, booking.via.value,
                          booking.oom_score_adj)
        lost = mark_lost_jobs(conn, job.host, facts.slice_path)
        book = read_book(conn, facts, job.host, runners=False, meminfo=meminfo)
        queue = queue_ahead(conn, job, job_id, book)
        ahead = sum(row["booked"] or 0 for row in queue.ahead)
        decision = decide(job.booking.booked, book, ahead)
        if decision is Decision.WAIT and ahead and backfills(job, book, queue):
            decision = Decision.ADMIT
        at = now()
        if job_id is None:
            state = {Decision.ADMIT: ADMITTED, Decision.WAIT: QUEUED}.get(decision, REFUSED)
            job_id = _insert(conn, job, state, at)
        elif decision is Decision.ADMIT:
            admit_queued_as_booked(conn, job_id, at)
        if decision is Decision.ADMIT:
            set_cgroup(conn, job_id, str(cage_path(job_id)))
        return decision, job_id, book, lost


def backfills(job: JobRow, book: MemoryBook, queue: QueueView) -> bool:
    """Whether the job may start ahead of the jobs queued before it by EASY backfill
    (actions/backfill.py), from the learned run times of the running jobs, of the jobs queued
    before it and its own."""
    ahead = [
        Waiter(row["booked"] or 0, waiter_run(queue.spans.get(row["fingerprint"], (None, None))[1]))
        for row in queue.ahead
    ]
    own = Waiter(job.booking.booked,
                 waiter_run(queue.spans.get(job.fingerprint, (None, None))[1]))
    return may_start(own, ahead, queue.holders, book.usable, queue.sure)


def planned_queue(
    store: StateStore, host: str, jobs: list[LedgerJob], usable: int, slice_cap: int
) -> dict[int, Spot]:
    """The host's queue as it will run (actions/backfill.queue_plan), by job id, from the jobs
    of a snapshot, the room its book shows and the learned run times, in the order admission
    takes (backfill.order_as_of_change in a slice of `slice_cap`)."""
    queued = [j for j in jobs if j.host == host and j.state == QUEUED]
    holding = [j for j in jobs if j.host == host and j.state in (ADMITTED, RUNNING)]
    if not queued:
        return {}
    with store.read() as conn:
        spans = durations(conn, {j.fingerprint for j in [*queued, *holding]})
    holders, _, running = running_ends(holding, spans, now())
    entries = [
        Queued(j.created_at, j.booked or 0, spans.get(j.fingerprint or "", (None, None))[1], j.id)
        for j in queued
    ]
    order = [queued[place] for place in order_as_of_change(entries, running, slice_cap)]
    waiters = [
        Waiter(j.booked or 0, waiter_run(spans.get(j.fingerprint or "", (None, None))[1]))
        for j in order
    ]
    plan = queue_plan(waiters, holders, usable)
    return {job.id: spot for job, spot in zip(order, plan, strict=True)}


def durations(
    conn: sqlite3.Connection, fingerprints: set[str | None]
) -> dict[str, tuple[float, float]]:
    """The shortest and the longest of each workload's recent recorded run times."""
    spans = {}
    for workload in fingerprints:
        if not workload:
            continue
        row = conn.execute(
            "SELECT MIN(duration), MAX(duration) FROM (SELECT duration FROM peaks"
            " WHERE fingerprint = ? AND duration IS NOT NULL ORDER BY recorded_at DESC LIMIT ?)",
            (workload, HISTORY_WINDOW),
        ).fetchone()
        if row is not None and row[0] is not None:
            spans[workload] = (float(row[0]), float(row[1]))
    return spans


UNLOCKED_WINDOW = 3.0
"""Seconds between reading the book and writing the row when the admission lock is switched
off (`no-admission-lock`, selftest only): wide enough that concurrent runners on any machine
meet inside it, so the race the lock prevents shows every time."""


def _unlocked_attempt(
    store: StateStore,
    job: JobRow,
    facts: SliceFacts,
    job_id: int | None,
    cage_path: Callable[[int], str],
    meminfo: dict[str, int],
) -> tuple[Decision, int, MemoryBook, list[LostJob]]:
    """`attempt` with the room read outside the write transaction: the broken decision the
    `no-admission-lock` switch stands for, which lets concurrent runners overbook."""
    with store.read() as conn:
        book = read_book(conn, facts, job.host, runners=False, meminfo=meminfo)
        queue = queue_ahead(conn, job, job_id, book)
        decision = decide(job.booking.booked, book, sum(row["booked"] or 0 for row in queue.ahead))
    time.sleep(UNLOCKED_WINDOW)
    with store.transaction() as conn:
        at = now()
        if job_id is None:
            state = {Decision.ADMIT: ADMITTED, Decision.WAIT: QUEUED}.get(decision, REFUSED)
            job_id = _insert(conn, job, state, at)
        elif decision is Decision.ADMIT:
            admit_queued_as_booked(conn, job_id, at)
        if decision is Decision.ADMIT:
            set_cgroup(conn, job_id, str(cage_path(job_id)))
    return decision, job_id, book, []


def decide(booked: int, book: MemoryBook, ahead: int) -> Decision:
    """The runner's decision: the booking rule, and no waiting that nothing could end.

    With no job holding a booking and none queued ahead, what the slice holds belongs to no job
    (kernel memory left behind, a cache), so a booking of the whole slice fits exactly; and a
    job that still does not fit then would wait for a room no job will ever give back: it is
    refused at once (252) instead of queueing until its --wait runs out.
    """
    decision = decide_admission(booked, book, ahead)
    if decision is Decision.NEVER and broken("no-never-fits"):
        return Decision.WAIT
    if decision is not Decision.WAIT or book.jobs or ahead:
        return decision
    if booked <= book.slice_cap and booked <= book.machine_room:
        return Decision.ADMIT
    return Decision.WAIT if broken("no-never-fits") else Decision.NEVER


def never_line(job_id: int, booked: int, book: MemoryBook) -> str:
    """Why a job can never be admitted here, and what to do about it."""
    if booked > book.slice_cap:
        return (
            f"job {job_id} can never fit: it books {format_size(booked)}, the whole slice is "
            f"{format_size(book.slice_cap)}; give a smaller --cap or run it on a bigger host"
        )
    return (
        f"job {job_id} cannot be admitted even with no job running: it books "
        f"{format_size(booked)}, the machine has {format_size(max(0, book.machine_room))} free "
        f"beyond the {format_size(book.margin)} margin; free memory outside swarmdeck, lower "
        "memory.margin or give a smaller --cap"
    )


def end_queued(
    conn: sqlite3.Connection, job_id: int, state: str, outcome: str, exit_code: int
) -> bool:
    """End the job's row as `state` (refused here, or moved to another host) with `outcome` and
    `exit_code`, only if it is still queued; whether it was. Run inside the caller's write
    transaction, so what it then does about a row no longer queued sees the same row."""
    return close_job(conn, job_id, state, outcome, exit_code, now(), only_from=(QUEUED,))


def give_up(store: StateStore, job_id: int, outcome: str, exit_code: int) -> None:
    """Close a queued row that will never run; Moved when it was moved to another host (its
    row then already says so). The jobs queued behind it counted its booking as ahead of
    theirs: they are woken to look again."""
    try:
        with store.transaction() as conn:
            if not end_queued(conn, job_id, REFUSED, outcome, exit_code):
                _moved(conn, job_id)
    finally:
        ring(str(store.path))


def admit(
    store: StateStore,
    job: JobRow,
    facts: SliceFacts,
    cage_path: Callable[[int], str],
    wait: float,
    say: Callable[[str], None],
    wakeup_fd: int | None = None,
    stop_signal: Callable[[], int | None] = lambda: None,
    rebook: Callable[[], Booking | None] | None = None,
) -> Admission:
    """Admit the job or raise: NotAdmittedError (252) when it never fits or the wait ran out,
    Interrupted when a signal arrived while queued, Moved (242) when its queued row was moved
    to another host. `say` gets the queued lines. While queued, `rebook` may give the job a
    new booking before each look (what its family learned meanwhile); the row then carries it
    and so does the Admission."""
    decision, job_id, book, lost = attempt(
        store, job, facts, None, cage_path, wakeup_fd, stop_signal
    )
    # Marked lost, these rows no longer hold a booking, and no later attempt will find them
    # again: their leftovers are cleared now, before this job is refused, waits or starts.
    _cleared(store, lost)
    booked = job.booking.booked
    if decision is Decision.NEVER:
        raise NotAdmittedError(never_line(job_id, booked, book))
    if decision is Decision.ADMIT:
        return Admission(job_id=job_id, book=book)
    try:
        bell: Doorbell | None = Doorbell(str(store.path), job.runner.pid, job.runner.start_ticks)
    except OSError as error:
        # No doorbell (the state folder refuses a FIFO): the job still waits, re-checking at
        # intervals as it did before doorbells.
        say(f"queued without a doorbell ({error.strerror}): it re-checks at intervals")
        bell = None
    try:
        return _queued(store, job, facts, cage_path, wait, say, wakeup_fd, stop_signal,
                       (job_id, book), bell, rebook)
    finally:
        if bell is not None:
            bell.close()


def _cleared(store: StateStore, lost: list[LostJob]) -> None:
    """Clear what lost jobs left, and wake the queue: their bookings no longer hold room."""
    clear_lost(lost)
    if lost:
        ring(str(store.path))


def _queued(
    store: StateStore,
    job: JobRow,
    facts: SliceFacts,
    cage_path: Callable[[int], str],
    wait: float,
    say: Callable[[str], None],
    wakeup_fd: int | None,
    stop_signal: Callable[[], int | None],
    first: tuple[int, MemoryBook],
    bell: Doorbell | None,
    rebook: Callable[[], Booking | None] | None = None,
) -> Admission:
    """Wait, queued, until admitted: re-check at once after the doorbell is up (room freed
    before it was is seen then), then each time it rings, and at growing intervals besides."""
    job_id, book = first
    booked = job.booking.booked
    decision = Decision.WAIT
    started = time.monotonic()
    next_line = started
    interval = RECHECK_INTERVAL
    rung = True
    while decision is not Decision.ADMIT:
        waited = time.monotonic() - started
        if waited >= wait:
            give_up(store, job_id, "waited past --wait", ExitCode.NOT_ADMITTED)
            raise NotAdmittedError(
                f"job {job_id} not admitted after {waited:.0f} s: {room_line(booked, book)}"
            )
        if time.monotonic() >= next_line:
            say(f"queued: job {job_id} {room_line(booked, book)}")
            next_line += QUEUED_LINE_EVERY
        if not rung:
            pause = min(interval, wait - waited)
            interval = min(RECHECK_MAX, interval * 1.5)
            fds = [fd for fd in (bell.fileno() if bell else None, wakeup_fd) if fd is not None]
            if fds:
                select.select(fds, [], [], pause)
            else:
                time.sleep(pause)
        rung = False
        if bell is not None:
            bell.drain()
        signum = stop_signal()
        if signum is not None:
            give_up(store, job_id, f"stopped while queued by signal {signum}", 128 + signum)
            raise Interrupted(f"job {job_id} stopped while queued", signum)
        fresh = rebook() if rebook is not None else None
        if fresh is not None and fresh != job.booking:
            job = rebooked(job, fresh)
            booked = fresh.booked
        try:
            decision, job_id, book, lost = attempt(
                store, job, facts, job_id, cage_path, wakeup_fd, stop_signal
            )
        except Interrupted as stopped:
            give_up(store, job_id, f"stopped while queued by signal {stopped.signum}",
                    128 + stopped.signum)
            raise
        except NotAdmittedError as error:
            give_up(store, job_id, "admission lock held too long", ExitCode.NOT_ADMITTED)
            raise error from None
        _cleared(store, lost)
        if decision is Decision.NEVER:
            give_up(store, job_id, "never fits", ExitCode.NOT_ADMITTED)
            raise NotAdmittedError(never_line(job_id, booked, book))
    return Admission(job_id=job_id, book=book, booking=job.booking)
