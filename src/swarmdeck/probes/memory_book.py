"""The memory book of this host: slice cap, what the slice's jobs hold, what is booked but not yet
grown, and the room left; plus the ledger's jobs as the Jobs panel and the snapshot show them.

Admission reads the book through `read_book` inside its own write transaction, and the app,
`status` and the hooks read it through `memory_book`: one computation, so what a person sees is
what the runner decides on. Nothing here changes anything; a job whose runner is gone is only
reported (`runner_alive`), and actions/reconcile.py is what marks it lost.
"""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING

from swarmdeck.ledger import finished_count as count_finished
from swarmdeck.ledger import finished_rows, rows_in_states
from swarmdeck.ledger.schema import ACTIVE, HOLDS_BOOKING, RUNNING
from swarmdeck.probes.cgroups import chosen_site, read_memory, slice_sites, why_no_site
from swarmdeck.probes.machine import local_host_name, read_meminfo
from swarmdeck.probes.procs import ProcessIdentity
from swarmdeck.probes.slice_owner import slice_problem

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from os import PathLike
    from typing import Any

    from swarmdeck.config import Config
    from swarmdeck.probes.host import HostSnapshot
    from swarmdeck.probes.usage import Usage, UsageTracker
    from swarmdeck.state import StateStore

RECENT_FINISHED = 20
"""How many finished jobs the Jobs panel keeps showing below the active ones."""


@dataclass(frozen=True)
class LedgerJob:
    """One ledger row, with its live memory use read from its cage while it runs."""

    id: int
    label: str
    host: str
    state: str
    argv: list[str]
    cwd: str
    booked: int | None
    cap: int | None
    current: int | None
    """Working set now (usage minus inactive page cache); None once the job is over, and
    while no cage of it can be read here (a job running on a peer has its cage there: the
    snapshot puts the peer's figure here once the peer was read, probes/peer_jobs.py)."""
    peak: int | None
    """Working-set peak once recorded; while running, the kernel's high-water mark so far."""
    kernel_peak: int | None
    admitted_via: str | None
    oom_score_adj: int | None
    created_at: float
    admitted_at: float | None
    started_at: float | None
    ended_at: float | None
    exit_code: int | None
    outcome: str | None
    hit_ceiling: bool
    cgroup: str | None
    output_path: str | None
    detached: bool
    runner_alive: bool | None
    """For an active row: whether its runner process (pid + start ticks) still exists."""
    pid: int | None = None
    start_ticks: int | None = None
    """The job's own process (the root of its tree) once it started."""
    threads: int | None = None
    """Threads the job declared (`--threads`)."""
    serial_marker_path: str | None = None
    """Where the job may write "serial right now: REASON" (its SWARMDECK_SERIAL_FILE)."""
    usage: Usage | None = None
    """Cores in use and threads at once since the previous snapshot; running jobs only."""
    serial_reason: str | None = None
    """The reason in its serial marker while a running job says it is serial on purpose."""
    session_id: str | None = None
    """The Claude Code session whose Bash tool started it (its CLAUDE_CODE_SESSION_ID)."""
    agent_id: str | None = None
    """The subagent of that session whose command it is; None for the main thread."""
    fingerprint: str | None = None
    """The workload fingerprint its peak is recorded under (actions/fingerprint.py)."""
    timeout: float | None = None
    """Seconds it was given to run (`--timeout`); None without a limit."""
    declared_cap: str | None = None
    """The `--cap` as it was given ("8G", "70%"); "" when none was, None on a row from before
    the ledger recorded it (`cap` is the cage's, which a share or a made cap is not)."""
    scope: str | None = None
    """The run-scope declaration it was started with (SWARMDECK_SCOPE); None when none was."""
    run_dir: str | None = None
    """A peer job's copy on the peer (its folder there, which the peer's own row names as its
    cwd); None for a job of this host."""
    figures_from: str | None = None
    """The peer whose reading gave this running job's cage, memory and cores figures
    (probes/peer_jobs.py); None when they were read here, or not at all."""
    figures_at: float | None = None
    """When that peer's reading was taken (epoch seconds); None unless `figures_from`."""

    @property
    def process(self) -> ProcessIdentity | None:
        """The job's root process while it runs; None before it started or once it ended."""
        return running_process(self.state, self.pid, self.start_ticks)

    def runtime(self, now: float | None = None) -> float | None:
        """Seconds run so far, or in all once ended; None before it started."""
        if self.started_at is None:
            return None
        end = self.ended_at if self.ended_at is not None else (now or time.time())
        return max(0.0, end - self.started_at)

    @property
    def stale(self) -> bool:
        """Active in the ledger although its runner is gone: it will be marked lost."""
        return self.state in ACTIVE and self.runner_alive is False

    def to_json(self) -> dict[str, object]:
        out = asdict(self)
        for kept_out in ("usage", "run_dir", "figures_from", "figures_at"):
            del out[kept_out]
        out["cores_in_use"] = self.usage.cores_in_use if self.usage else None
        out["threads_at_once"] = self.usage.threads_at_once if self.usage else None
        out["runtime"] = self.runtime()
        out["stale"] = self.stale
        return out


BAR_PARTS = ("outside the slice", "slice used", "booked, not yet grown", "room")
"""The names of the memory book's parts as a bar shows them, left to right (MemoryBook.bar)."""


@dataclass(frozen=True)
class MemoryBook:
    """One host's memory book at one moment (bytes)."""

    host: str
    slice_cap: int
    unreclaimable: int
    """What the slice's jobs really hold: usage minus inactive page cache (never less than the
    sum of what its jobs were read to hold)."""
    not_yet_grown: int
    """Booked by admitted jobs but not used yet: Σ max(0, booked − current)."""
    mem_total: int
    mem_available: int
    margin: int
    backend: str
    """The cage backend in use ("" when none can be set up)."""
    slice_path: str
    placement: str
    """Why the slice is where it is: configured, hierarchy root, under own cgroup."""
    problem: str
    """Why no cage can be set up here; "" when one can."""
    jobs: tuple[LedgerJob, ...] = ()
    """The jobs holding a booking."""

    @property
    def room(self) -> int:
        """What a new job may book inside the slice; never below 0: a slice holding more than
        its cap (kernel memory on a cap of 0) has no room, not a debt."""
        return max(0, self.slice_cap - self.unreclaimable - self.not_yet_grown)

    @property
    def machine_room(self) -> int:
        """What the machine as a whole can still give a new job, keeping the margin; never
        below 0."""
        return max(0, self.mem_available - self.not_yet_grown - self.margin)

    @property
    def usable(self) -> int:
        """What a booking must fit in: the smaller room."""
        return min(self.room, self.machine_room)

    @property
    def used_outside_slice(self) -> int:
        """Memory in use by everything that is not a caged job."""
        return max(0, self.mem_total - self.mem_available - self.unreclaimable)

    def bar(self) -> tuple[tuple[str, int], ...]:
        """The stacked memory bar, left to right, over mem_total, its parts named BAR_PARTS."""
        values = (self.used_outside_slice, self.unreclaimable, self.not_yet_grown, self.usable)
        return tuple(zip(BAR_PARTS, values, strict=True))

    def host_fields(self) -> dict[str, object]:
        """The book as flat keys of its host's object in the snapshot JSON."""
        return {
            "slice_backend": self.backend,
            "slice_path": self.slice_path,
            "slice_placement": self.placement,
            "slice_problem": self.problem,
            "slice_used": self.unreclaimable,
            "not_yet_grown": self.not_yet_grown,
            "room": self.room,
            "machine_room": self.machine_room,
            "used_outside_slice": self.used_outside_slice,
        }

    @classmethod
    def from_host_fields(cls, host: HostSnapshot, data: Mapping[str, Any]) -> MemoryBook | None:
        """A peer's book read back from its host object (`host_fields` beside the host's own
        figures); None when the object carries no book. The margin is not sent: it is what
        makes the reported machine room, so both rooms come out as the peer reported them."""
        if "room" not in data:
            return None
        whole = {key: data.get(key) for key in ("slice_used", "not_yet_grown", "machine_room")}
        for key, value in whole.items():
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"book figure {key!r} missing or not int: {value!r}")
        texts = {
            key: data.get(key, "")
            for key in ("slice_backend", "slice_path", "slice_placement", "slice_problem")
        }
        return cls(
            host=host.name,
            slice_cap=host.memory.slice_cap,
            unreclaimable=whole["slice_used"],
            not_yet_grown=whole["not_yet_grown"],
            mem_total=host.memory.total,
            mem_available=host.memory.available,
            margin=host.memory.available - whole["not_yet_grown"] - whole["machine_room"],
            backend=str(texts["slice_backend"] or ""),
            slice_path=str(texts["slice_path"] or ""),
            placement=str(texts["slice_placement"] or ""),
            problem=str(texts["slice_problem"] or ""),
        )

    def to_json(self) -> dict[str, object]:
        out = {key: value for key, value in asdict(self).items() if key != "jobs"}
        out.update(
            room=self.room,
            machine_room=self.machine_room,
            usable=self.usable,
            used_outside_slice=self.used_outside_slice,
            jobs=[job.id for job in self.jobs],
        )
        return out


def not_yet_grown(bookings: Iterable[tuple[int, int]]) -> int:
    """Σ max(0, booked − current) over (booked, current) pairs."""
    return sum(max(0, booked - current) for booked, current in bookings)


def running_process(state: str, pid: int | None, start_ticks: int | None) -> ProcessIdentity | None:
    """A job's root process while it runs (LedgerJob.process, from its row's fields)."""
    if state != RUNNING or pid is None or start_ticks is None:
        return None
    return ProcessIdentity(pid, start_ticks)


def job_from_row(
    row: sqlite3.Row,
    live: bool = True,
    runners: bool = True,
    usage: Usage | None = None,
    serial_reason: str | None = None,
) -> LedgerJob:
    """A ledger row as a LedgerJob; `live` reads the cage and, with `runners`, checks the
    runner (admission skips that: it has just closed the rows of dead runners itself).
    `usage` and `serial_reason` are what the usage tracker and the serial marker say of a
    running job (see ledger_jobs)."""
    keys = row.keys()
    state = row["state"]
    current = peak_now = None
    runner_alive = None
    if live and state in ACTIVE:
        if runners and row["runner_pid"] is not None and row["runner_start_ticks"] is not None:
            runner_alive = ProcessIdentity(
                row["runner_pid"], row["runner_start_ticks"]
            ).is_alive()
        # No cage to read (a job on a peer, whose cage is there; one not made yet or just
        # removed): its use is unknown here, never a false 0B.
        reading = read_memory(row["cgroup"]) if row["cgroup"] else None
        current = reading.working_set if reading else None
        peak_now = reading.peak if reading else None
    return LedgerJob(
        id=row["id"],
        label=row["label"] or "",
        host=row["host"] or "",
        state=state,
        argv=json.loads(row["argv"] or "[]"),
        cwd=row["cwd"] or "",
        booked=row["booked"],
        cap=row["cap"],
        current=current,
        peak=row["peak"] if row["peak"] is not None else peak_now,
        kernel_peak=row["kernel_peak"] if row["kernel_peak"] is not None else peak_now,
        admitted_via=row["admitted_via"],
        oom_score_adj=row["oom_score_adj"],
        created_at=row["created_at"],
        admitted_at=row["admitted_at"] if "admitted_at" in keys else None,
        started_at=row["started_at"],
        ended_at=row["ended_at"],
        exit_code=row["exit_code"],
        outcome=row["outcome"],
        hit_ceiling=bool(row["hit_ceiling"]),
        cgroup=row["cgroup"],
        output_path=row["output_path"],
        detached=bool(row["detached"]),
        runner_alive=runner_alive,
        pid=row["pid"],
        start_ticks=row["start_ticks"],
        threads=row["threads"],
        serial_marker_path=row["serial_marker_path"],
        usage=usage,
        serial_reason=serial_reason,
        session_id=row["session_id"] if "session_id" in keys else None,
        agent_id=row["agent_id"] if "agent_id" in keys else None,
        fingerprint=row["fingerprint"] if "fingerprint" in keys else None,
        timeout=row["timeout"] if "timeout" in keys else None,
        declared_cap=row["declared_cap"] if "declared_cap" in keys else None,
        scope=row["scope"] if "scope" in keys else None,
        run_dir=row["run_dir"] if "run_dir" in keys else None,
    )


def booked_rows(conn: sqlite3.Connection, host: str) -> list[sqlite3.Row]:
    return rows_in_states(conn, host, HOLDS_BOOKING)


@dataclass(frozen=True)
class SliceFacts:
    """Where the slice is and what it is capped at, decided once per caller."""

    slice_cap: int
    margin: int
    backend: str
    slice_path: str | None
    placement: str
    problem: str


def slice_cap_of(config: Config, mem_total: int) -> int:
    """The slice's cap: MemTotal less memory.reserve; 0 when the reserve takes it all."""
    return max(0, mem_total - config.memory.reserve.resolve(mem_total))


def reserve_problem(config: Config, mem_total: int) -> str:
    """Why memory.reserve leaves no slice to run jobs in; "" when it leaves one. The runner
    refuses on this line before it writes anything, and the book shows it as its problem."""
    if slice_cap_of(config, mem_total) > 0:
        return ""
    from swarmdeck.sizes import format_size

    where = config.sources.get("memory.reserve", "default")
    total = format_size(mem_total)
    return (
        f"memory.reserve = {config.memory.reserve} ({where}) leaves no memory for the job slice"
        f" (0B of MemTotal {total}): give a reserve below {total}"
    )


def slice_facts(config: Config, mem_total: int) -> SliceFacts:
    """The slice the configured backends would use, and the cap and margin from the config."""
    sites = slice_sites(config.memory.slice)
    site = chosen_site(sites)
    problem = reserve_problem(config, mem_total) if site else why_no_site(sites)
    return SliceFacts(
        slice_cap=slice_cap_of(config, mem_total),
        margin=config.memory.margin.resolve(mem_total),
        backend=site.backend if site and not problem else "",
        slice_path=site.path if site else None,
        placement=site.placement if site else "",
        problem=problem,
    )


def for_ledger(facts: SliceFacts, ledger: PathLike[str] | str) -> SliceFacts:
    """The facts as this ledger may use them: a slice another ledger owns is no cage for it,
    with the line the runner refuses on (probes/slice_owner.py) as the problem."""
    if facts.problem or facts.slice_path is None:
        return facts
    problem = slice_problem(facts.slice_path, ledger)
    return replace(facts, backend="", problem=problem) if problem else facts


def read_book(
    conn: sqlite3.Connection,
    facts: SliceFacts,
    host: str,
    runners: bool = True,
    meminfo: Mapping[str, int] | None = None,
) -> MemoryBook:
    """The book from the ledger rows visible to `conn` and the slice's cgroup as it is now.

    Called inside admission's write transaction, so the rows cannot change while it decides.
    """
    jobs = [job_from_row(row, runners=runners) for row in booked_rows(conn, host)]
    return book_of(facts, host, jobs, meminfo)


def book_of(
    facts: SliceFacts,
    host: str,
    jobs: list[LedgerJob],
    meminfo: Mapping[str, int] | None = None,
) -> MemoryBook:
    """The book from the jobs holding a booking, read just now, and the slice read after them.
    `meminfo` is the kernel's as the caller read it before the jobs (a snapshot's one reading);
    without it it is read now."""
    meminfo = read_meminfo() if meminfo is None else meminfo
    reading = read_memory(facts.slice_path) if facts.slice_path else None
    # The cages are read one after another and the slice after them: a job that exits in
    # between must not make room in the book that its still-open row has not given back.
    held = sum(job.current or 0 for job in jobs)
    return MemoryBook(
        host=host,
        slice_cap=facts.slice_cap,
        unreclaimable=max(held, reading.working_set if reading else 0),
        not_yet_grown=not_yet_grown((job.booked or 0, job.current or 0) for job in jobs),
        mem_total=meminfo["MemTotal"],
        mem_available=meminfo.get("MemAvailable", meminfo.get("MemFree", 0)),
        margin=facts.margin,
        backend=facts.backend,
        slice_path=str(facts.slice_path or ""),
        placement=facts.placement,
        problem=facts.problem,
        jobs=tuple(jobs),
    )


def memory_book(
    config: Config,
    store: StateStore,
    host: str | None = None,
    jobs: list[LedgerJob] | None = None,
    meminfo: Mapping[str, int] | None = None,
) -> MemoryBook:
    """This host's memory book as the app, `status` and the hooks show it; a slice another
    ledger owns is no cage for this store's ledger (`for_ledger`), as the runner finds.

    `jobs` are this host's jobs as `ledger_jobs` has just read them (the snapshot's): the book
    is then made from those same readings instead of reading every cage a second time. So is
    `meminfo`, the kernel's as the snapshot read it; without it it is read now.
    """
    meminfo = read_meminfo() if meminfo is None else meminfo
    facts = for_ledger(slice_facts(config, meminfo["MemTotal"]), store.path)
    host = host or local_host_name()
    if jobs is not None:
        return book_of(
            facts, host, [job for job in jobs if job.state in HOLDS_BOOKING], meminfo
        )
    with store.read() as conn:
        return read_book(conn, facts, host, meminfo=meminfo)


def usage_of_rows(
    rows: list[sqlite3.Row], tracker: UsageTracker
) -> dict[int, tuple[Usage | None, str | None]]:
    """Each running job's use of the machine since the tracker's last look, and the reason it
    gives for a serial phase, by job id, read from its ledger row."""
    # Here, not at the top: admission reads the book on every `swarmdeck run`, which has no
    # use for the usage sampler's import time.
    from swarmdeck.probes.usage import Supervised, serial_reason

    followed = {
        row["id"]: (Supervised(root, row["cgroup"] or None), row["serial_marker_path"])
        for row in rows
        if (root := running_process(row["state"], row["pid"], row["start_ticks"])) is not None
    }
    figures = tracker.update({job_id: job for job_id, (job, _) in followed.items()})
    return {
        job_id: (figures[job_id], serial_reason(marker))
        for job_id, (_, marker) in followed.items()
    }


def ledger_jobs(
    store: StateStore,
    host: str | None = None,
    usage: UsageTracker | None = None,
    finished: int | None = RECENT_FINISHED,
    runners: bool = True,
) -> list[LedgerJob]:
    """Active jobs, then the most recent `finished` finished ones (None: all of them), for the
    Jobs panel and the snapshot.

    With `usage` (a tracker kept between calls), running jobs carry their cores figures.
    `runners=False` leaves each runner unchecked (`runner_alive` None): for a caller that has
    just closed the rows of dead runners, which checked every one.
    """
    host = host or local_host_name()
    with store.read() as conn:
        active = rows_in_states(conn, host, ACTIVE)
        finished = finished_rows(conn, host, finished)
    # Each running job is built once, with its figures: they are read from its row first.
    figures = usage_of_rows(active, usage) if usage is not None else {}
    jobs = []
    for row in active:
        used, serial = figures.get(row["id"], (None, None))
        jobs.append(job_from_row(row, runners=runners, usage=used, serial_reason=serial))
    return jobs + [job_from_row(row, live=False) for row in finished]


def finished_count(store: StateStore, host: str | None = None) -> int:
    """How many finished jobs the ledger holds for `host`: more than shown means truncated."""
    with store.read() as conn:
        return count_finished(conn, host or local_host_name())
