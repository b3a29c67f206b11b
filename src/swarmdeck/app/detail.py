"""Detail views opened with `enter` on a row, closed with `esc`: one job, one session or agent.

A detail view follows the app's snapshots while it is open (a running job's figures and the
last lines of its output change under the reader's eyes); everything in it comes from the
snapshot, the job's own output file and the peaks its workload recorded, so it shows the same
after a restart. Only the use over time (cores, threads) is what the app saw since it started
(app/history.py).
"""

from __future__ import annotations

import os
import re
import shlex
import sqlite3
import time
from collections.abc import Iterable
from typing import Any, ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Label, Static

from swarmdeck.actions.admission import planned_queue
from swarmdeck.actions.backfill import Spot
from swarmdeck.actions.hosts.peer_ledger import VIA_PEER
from swarmdeck.actions.migration import moved_copy, moved_to
from swarmdeck.actions.oom import reached_its_cap, squeezed_out
from swarmdeck.app.bar import BarSegment, ScaledSparkline, StackedBar, bar_line
from swarmdeck.app.bar_legend import FREE, JOB_MEMORY
from swarmdeck.app.history import JobPoint, RoomHistory
from swarmdeck.app.quiet import show_text
from swarmdeck.durations import NONE, runtime_text
from swarmdeck.errors import StateError
from swarmdeck.ledger.schema import ACTIVE, QUEUED, RUNNING
from swarmdeck.printable import printable, printable_lines, printable_text
from swarmdeck.probes.claude.sessions import SessionInfo
from swarmdeck.probes.claude.subagents import SubagentInfo
from swarmdeck.probes.memory_book import LedgerJob
from swarmdeck.probes.peaks import WorkloadHistory, workload_history
from swarmdeck.sizes import format_size
from swarmdeck.snapshot import Snapshot
from swarmdeck.state import StateStore
from swarmdeck.views.cells import size_cell
from swarmdeck.views.jobs import cores_cell, state_cell
from swarmdeck.views.sessions import figures_facts

OUTPUT_LINES = 20
"""How many of a job's last output lines the detail view shows."""
OUTPUT_TAIL = 16 * 1024
"""Bytes read from the end of a job's output file, enough for those lines."""
PEAK_RUNS = 60
"""How many of a workload's recorded runs its peak history shows."""


def last_lines(job: LedgerJob, count: int = OUTPUT_LINES) -> str:
    """The last `count` lines of a job's output, or why there are none: a job moved to a peer
    before it started wrote none here; a peer run followed from a terminal wrote it there."""
    path = job.output_path
    where = moved_to(job)
    if where is not None:
        host, copy_id = where
        there = f"; job {copy_id} is its run there" if copy_id is not None else ""
        return f"no output here: it moved to {host} before it started{there}"
    if not path and job.admitted_via == VIA_PEER:
        return (f"no output file recorded: the peer run that started it on {job.host} wrote"
                " its output to its own terminal")
    if not path:
        return "no output file recorded (the job ran attached to its terminal)"
    try:
        with open(path, "rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            handle.seek(max(0, size - OUTPUT_TAIL))
            data = handle.read()
    except OSError as error:
        return f"output not readable: {error.strerror or error}"
    lines = data.decode("utf-8", "replace").splitlines()
    return printable_lines("\n".join(lines[-count:])) if lines else "(no output yet)"


JOB_PARTS = ("now", "peak", "booked")
"""The names of a job's bar parts, in bar_legend.JOB_MEMORY order."""


def memory_segments(job: LedgerJob) -> tuple[tuple[BarSegment, ...], int]:
    """A job's memory as a bar over its cap: now, the peak beyond now, the booking beyond it,
    in the legend's glyphs (app/bar_legend.py)."""
    current = job.current or 0
    peak = max(job.peak or 0, current)
    booked = job.booked or 0
    total = max(job.cap or 0, booked, peak, 1)
    values = (current, peak - current, max(0, booked - peak))
    return tuple(
        BarSegment(value, mark.style, name, mark.glyph)
        for value, mark, name in zip(values, JOB_MEMORY, JOB_PARTS, strict=True)
    ), total


def memory_legend() -> Text:
    """The figures beside a job's memory bar: each part's glyph and name, from the legend."""
    text = Text(" ")
    for mark, name in zip(JOB_MEMORY, JOB_PARTS, strict=True):
        text.append(mark.glyph, style=mark.style)
        text.append(f" {name} ")
    text.append(f"{FREE.glyph} free of its cap")
    return text


_PIECE = re.compile(r"[^ /-]*[ /-]|[^ /-]+")
"""A piece of a value that a line may end after: up to and with a space, a slash or a dash."""


def wrapped(value: str, width: int) -> list[str]:
    """`value` as lines of at most `width` cells, each broken after a space (dropped), a
    slash or a dash, so a path or a command is never cut mid-word; only a single piece longer
    than a whole line is cut, where it must."""
    lines: list[str] = []
    for paragraph in value.split("\n"):
        line = ""
        for piece in _PIECE.findall(paragraph):
            if line and len(line + piece.rstrip(" ")) > width:
                lines.append(line.rstrip(" "))
                line = ""
            while len(piece.rstrip(" ")) > width:
                lines.append(piece[:width])
                piece = piece[width:]
            line += piece
        lines.append(line.rstrip(" "))
    return lines


def fact_lines(facts: Iterable[tuple[str, str | Text]], name_width: int, width: int) -> Text:
    """One fact a line, its name right-aligned in `name_width` cells; a value longer than the
    space left in `width` wraps under its own column, and one of several lines (the jobs a
    session launched) keeps them, each under that column too. Values come from outside: every
    other control character in them is shown as its escape."""
    text = Text()
    space = max(10, width - name_width - 2)
    for name, value in facts:
        text.append(f"{name:>{name_width}}  ", style="bold")
        if isinstance(value, Text):
            text.append_text(printable_text(value))
        else:
            lines = wrapped(printable_lines(value), space)
            text.append(("\n" + " " * (name_width + 2)).join(lines))
        text.append("\n")
    return text


def job_title(job: LedgerJob) -> str:
    """The detail view's title: the job's id and its label, as the Jobs panel names it."""
    return f"Job {job.id}: {job.label}" if job.label else f"Job {job.id}"


def admitted_text(job: LedgerJob) -> str:
    """What the job's booking was based on, in the words that are true of it: a job that moved
    while queued was never admitted here; a peer run's copy was booked by the peer's runner."""
    if moved_to(job) is not None:
        return "not here: it moved while queued"
    if job.admitted_via == VIA_PEER:
        return f"{job.host}'s own runner (a peer run: booked and caged there)"
    return job.admitted_via or NONE


def moved_text(job: LedgerJob, copy: LedgerJob | None) -> str:
    """Where a job moved from here went, and how its copy runs there (`copy`, its row here,
    when the snapshot has it)."""
    where = moved_to(job)
    host, copy_id = where if where is not None else (job.host, None)
    if copy is None:
        return host + (f", as job {copy_id}" if copy_id is not None else "")
    if copy.state in ACTIVE:
        how = f"{copy.state} there under {copy.host}'s own swarmdeck run"
    else:
        how = f"{copy.state} there" + (f" ({copy.outcome})" if copy.outcome else "")
    return f"{copy.host}, as job {copy.id}: {how}"


def queue_text(spot: Spot, queued: int) -> str:
    """Where a queued job stands, what it waits for, and when it should start."""
    if spot.starts_in is None:
        start = "not known: it waits on a job with no learned run time"
    elif spot.starts_in <= 0:
        start = "now"
    else:
        start = f"in about {runtime_text(spot.starts_in)}"
    return f"place {spot.place} of {queued}; waits for {spot.waits_for}; expected start {start}"


def on_peer(job: LedgerJob) -> str:
    """What follows a running peer job's cage, memory and cores figures: the peer they were
    read on, or that they are read there and not yet here; "" for a job of this host."""
    if job.figures_from is not None:
        return f" on {job.figures_from}"
    if job.state == RUNNING and job.admitted_via == VIA_PEER:
        return f" (read on {job.host}: not read yet)"
    return ""


def job_facts(
    job: LedgerJob, now: float, width: int = 120, copy: LedgerJob | None = None,
    queue: str | None = None,
) -> Text:
    """Everything the ledger knows of a job, one fact a line, to fit `width` cells; a job that
    moved to a peer says where and how its copy (`copy`, its row here) runs there; a queued
    one, where it stands in the queue (`queue`, from queue_text)."""
    moved = (("moved to", moved_text(job, copy)),) if moved_to(job) is not None else ()
    moved += (("queue", queue),) if queue else ()
    at_cap = (" (ceiling: it reached its cap)"
              if reached_its_cap(job.hit_ceiling, job.outcome) else "")
    facts = (
        ("state", state_cell(job, whole=True)),
        ("command", shlex.join(job.argv) or NONE),
        *((("scope", job.scope),) if job.scope else ()),
        ("cwd", job.cwd or NONE),
        ("host", job.host),
        *moved,
        ("cage", (job.cgroup or NONE) + on_peer(job)),
        ("runtime", runtime_text(job.runtime(now))),
        ("cores", cores_cell(job).append(on_peer(job) if job.usage is not None else "")),
        ("memory", f"now {size_cell(job.current)} · peak {size_cell(job.peak)}"
                   f"{at_cap}{on_peer(job)}"
                   f" · booked {size_cell(job.booked)} · cap {size_cell(job.cap)}"),
        ("admitted via", admitted_text(job)),
        ("oom adj", NONE if job.oom_score_adj is None else str(job.oom_score_adj)),
        ("output", job.output_path or NONE),
    )
    return fact_lines(facts, 13, width)


def peak_series(history: WorkloadHistory) -> tuple[float, ...]:
    """The recorded peaks, oldest first: one sparkline column per run."""
    return tuple(float(run.peak) for run in reversed(history.runs))


def peak_figures(history: WorkloadHistory | str | None, fingerprint: str | None) -> str:
    """What the peak sparkline shows, in words: how many runs, the last and the largest; or
    why there is nothing to show (`history` a string: why the peaks could not be read)."""
    if fingerprint is None:
        return " no workload fingerprint recorded"
    if history is None:
        return " reading its recorded peaks…"
    if isinstance(history, str):
        return f" peaks not read: {history}"
    if not history.runs:
        return " no run of it recorded yet"
    most = max(run.peak for run in history.runs)
    shown = len(history.runs)
    runs = (
        f"{shown} run{'s' if shown > 1 else ''}" if shown == history.recorded
        else f"last {shown} of {history.recorded}"
    )
    at_cap = sum(1 for run in history.runs if reached_its_cap(run.hit_ceiling, run.outcome))
    squeezed = sum(1 for run in history.runs if squeezed_out(run.outcome))
    hit = (f", {at_cap} at cap" if at_cap else "") + (
        f", {squeezed} squeezed out" if squeezed else "")
    return (f" {runs}: last {format_size(history.runs[0].peak)}, most {format_size(most)}{hit}")


def usage_top(job: LedgerJob, points: list[JobPoint], host_cores: int | None) -> float:
    """The full height of the cores and threads sparklines: the threads it declared, else the
    host's cores; never less than what it was seen to use."""
    seen = max((max(p.cores_in_use, p.threads_at_once) for p in points), default=0.0)
    return max(float(job.threads or host_cores or 1), seen)


def usage_figures(points: list[JobPoint], top: float, which: str, peer: str = "") -> str:
    """The most of `which` ("cores_in_use" or "threads_at_once") seen, of the scale's top;
    `peer`, the job runs there and its figures are that peer's readings (on_peer)."""
    if not points:
        return f" not read from {peer} yet" if peer else " not sampled while the app ran"
    most = max(getattr(point, which) for point in points)
    name = "cores in use" if which == "cores_in_use" else "threads at once"
    return f" {name}, most {most:.1f} of {top:g}" + (f" on {peer}" if peer else "")


class DetailScreen(Screen[None]):
    """A full screen about one thing; `esc` goes back to the panels. It follows the app's
    attribute named by FOLLOWS (`snapshot`, or `sessions`)."""

    BINDINGS = [Binding("escape", "app.pop_screen", "Back")]
    FOLLOWS: ClassVar[str] = "snapshot"

    def on_mount(self) -> None:
        self.watch(self.app, self.FOLLOWS, self._follow, init=True)

    def on_resize(self) -> None:
        """Long values wrap to the width: draw again for the new one."""
        self._follow(getattr(self.app, self.FOLLOWS, None))

    def _follow(self, value: Any) -> None:
        # Not attached: the app is ending, and a view that drew now could mount into a screen
        # that is no longer there (MountError).
        if value is not None and self.is_attached:
            self.follow(value)

    @property
    def text_width(self) -> int:
        """The cells a line of the detail panel holds (inside its border and padding)."""
        return max(20, self.size.width - 4)

    def follow(self, value: Any) -> None:
        """Redraw from the app's latest value of FOLLOWS; each view says how (the base shows
        nothing)."""


class JobDetail(DetailScreen):
    """One job: its command and cage, memory now/peak/booked/cap, the peaks its workload
    recorded, its cores and threads over time, the end of its output."""

    def __init__(self, job_id: int, store: StateStore, history: RoomHistory) -> None:
        """Args:
        job_id: The ledger id of the job.
        store: The state file its workload's recorded peaks are read from.
        history: What the app saw of the job's use since it started.
        """
        super().__init__(id="job-detail")
        self.job_id = job_id
        self._store = store
        self._history = history
        self._peaks: WorkloadHistory | str | None = None
        """The recorded peaks once read, or why they could not be."""
        self._peaks_read_for: tuple[str, str] | None = None
        """(fingerprint, job state) the peaks were last read for: a run that ends adds one."""
        self._queue: str | None = None
        """Where the job stands in the queue while it is queued (queue_text)."""
        self._queue_for: float | None = None
        """The snapshot (its taken_at) the queue was last worked out from."""

    def compose(self) -> ComposeResult:
        with Vertical(classes="detail panel") as box:
            box.border_title = f"Job {self.job_id}"
            yield Static("", id="job-facts")
            yield bar_line(
                "memory", StackedBar(id="job-memory"), memory_legend()
            )
            for name in ("peaks", "cores", "threads"):
                yield bar_line(
                    name, ScaledSparkline(id=f"job-{name}"), figures_id=f"job-{name}-figures"
                )
            yield Label("\n[b]last lines of its output[/b]")
            with VerticalScroll(id="job-output-box"):
                yield Static("", id="job-output")
        yield Footer()

    def follow(self, value: Any) -> None:
        snapshot: Snapshot = value
        job = next((j for j in snapshot.jobs if j.id == self.job_id), None)
        facts = self.query_one("#job-facts", Static)
        if job is None:
            show_text(facts, Text(f"job {self.job_id} is no longer in the ledger's recent jobs"))
            return
        self.query_one(".detail").border_title = job_title(job)
        copy = moved_copy(job, snapshot.jobs)
        self._show_queue(job, snapshot)
        show_text(facts, job_facts(job, time.time(), self.text_width, copy, self._queue))
        bar = self.query_one("#job-memory", StackedBar)
        bar.segments, bar.total = memory_segments(job)
        self._show_peaks(job)
        self._show_usage(job, snapshot)
        self._show_output(job)

    def _show_queue(self, job: LedgerJob, snapshot: Snapshot) -> None:
        """A queued job's place: worked out in a thread from each new snapshot (the learned
        run times are read from the state file), shown from the one before meanwhile."""
        if job.state != QUEUED:
            self._queue = None
            return
        book = next((b for b in snapshot.books if b.host == job.host), None)
        if book is not None and snapshot.taken_at != self._queue_for:
            self._queue_for = snapshot.taken_at
            self._read_queue(job.host, list(snapshot.jobs), book.usable, book.slice_cap)

    @work(thread=True, exclusive=True, group="job-queue", exit_on_error=False)
    def _read_queue(self, host: str, jobs: list[LedgerJob], usable: int, slice_cap: int
                    ) -> None:
        try:
            spots = planned_queue(self._store, host, jobs, usable, slice_cap)
        except (sqlite3.Error, StateError):
            return  # the place is shown again from the next snapshot
        spot = spots.get(self.job_id)
        text = queue_text(spot, len(spots)) if spot is not None else None
        self.app.call_from_thread(setattr, self, "_queue", text)

    def _show_output(self, job: LedgerJob) -> None:
        """The end of the job's output, followed like `tail -f`: while the reader has not
        scrolled up from the end, the box is scrolled to its end again after each change."""
        box = self.query_one("#job-output-box", VerticalScroll)
        at_end = box.scroll_y >= box.max_scroll_y
        show_text(self.query_one("#job-output", Static), Text(last_lines(job)))
        if at_end:
            box.call_after_refresh(box.scroll_end, animate=False)

    def _show_peaks(self, job: LedgerJob) -> None:
        """The workload's recorded peaks, read again in a thread when the job's state changed."""
        wanted = (job.fingerprint, job.state) if job.fingerprint else None
        if wanted is not None and wanted != self._peaks_read_for:
            self._peaks_read_for = wanted
            self._read_peaks(job.fingerprint)
        spark = self.query_one("#job-peaks", ScaledSparkline)
        peaks = self._peaks
        series = peak_series(peaks) if isinstance(peaks, WorkloadHistory) else ()
        spark.top = max((job.cap or 0, *series, 1))
        spark.data = series
        show_text(self.query_one("#job-peaks-figures", Label),
                  peak_figures(peaks, job.fingerprint))

    @work(thread=True, exclusive=True, group="job-peaks", exit_on_error=False)
    def _read_peaks(self, fingerprint: str | None) -> None:
        if fingerprint is None:
            return
        peaks: WorkloadHistory | str
        try:
            peaks = workload_history(self._store, fingerprint, PEAK_RUNS)
        except (sqlite3.Error, StateError) as error:
            peaks = str(error)
        self.app.call_from_thread(self._took_peaks, peaks)

    def _took_peaks(self, peaks: WorkloadHistory | str) -> None:
        self._peaks = peaks
        snapshot: Snapshot | None = getattr(self.app, "snapshot", None)
        job = next((j for j in snapshot.jobs if j.id == self.job_id), None) if snapshot else None
        if job is not None:
            self._show_peaks(job)

    def _show_usage(self, job: LedgerJob, snapshot: Snapshot) -> None:
        """Cores in use and threads at once at each snapshot the app saw while it ran."""
        points = self._history.job(job.id)
        host = next((h for h in snapshot.hosts if h.name == job.host), None)
        if host is None:
            reading = next((p for p in snapshot.peers if p.name == job.host), None)
            host = reading.host if reading is not None else None
        peer = job.host if job.admitted_via == VIA_PEER else ""
        top = usage_top(job, points, host.cores.count if host else None)
        for which, name in (("cores_in_use", "cores"), ("threads_at_once", "threads")):
            spark = self.query_one(f"#job-{name}", ScaledSparkline)
            spark.top = top
            spark.data = tuple(getattr(point, which) for point in points)
            show_text(self.query_one(f"#job-{name}-figures", Label),
                      usage_figures(points, top, which, peer))


def launched_by(jobs: list[LedgerJob], session_id: str, agent_id: str | None) -> list[LedgerJob]:
    """The ledger jobs a session (its main thread and subagents) or one subagent started."""
    return [
        job for job in jobs
        if job.session_id == session_id and (agent_id is None or job.agent_id == agent_id)
    ]


def jobs_text(jobs: list[LedgerJob]) -> str:
    """One job a line: id, label, state and host; "none" without any."""
    if not jobs:
        return NONE
    return "\n".join(
        f"#{job.id} {printable(job.label)} · {state_cell(job).plain} · {job.host}" for job in jobs
    )


def all_subagents(session: SessionInfo) -> int:
    """How many subagents the session ran: those listed and those retired (KEEP_ENDED)."""
    return len(session.subagents) + session.retired_finished + session.retired_failed


def agent_facts(
    session: SessionInfo,
    sub: SubagentInfo | None,
    now: float,
    jobs: tuple[LedgerJob, ...] = (),
    width: int = 120,
) -> Text:
    """A session, or one of its subagents, one fact a line, and the jobs it launched, to fit
    `width` cells."""
    if sub is None:
        facts = [
            ("session", session.session_id),
            ("title", session.title or NONE),
            ("cwd", session.cwd or NONE),
            ("branch", session.git_branch or NONE),
            ("live", "yes" if session.live else "ended"),
            ("state", session.state or NONE),
            ("waiting for", session.waiting_for or NONE),
            ("subagents", f"{session.health.running} running of {len(session.subagents)}"),
            *figures_facts(session.figures, now),
            ("transcript", session.transcript_path),
        ]
        call = session.tool_in_flight
    else:
        took = (sub.ended_at or now) - sub.started_at if sub.started_at is not None else None
        facts = [
            ("session", session.session_id),
            ("subagent", sub.id),
            ("description", sub.description or NONE),
            ("type", sub.type),
            ("status", sub.status),
            ("time", runtime_text(took)),
            ("tool calls", str(sub.tool_calls)),
            ("tokens", NONE if sub.tokens is None else str(sub.tokens)),
            ("into the main context", format_size(sub.context_bytes)),
            ("transcript", sub.transcript_path or NONE),
        ]
        call = sub.tool_in_flight
    if call is not None:
        since = now - call.started_at if call.started_at is not None else None
        facts.append(("tool in flight", f"{call.name} {call.summary} · {runtime_text(since)}"))
    facts.append(("jobs it launched", jobs_text(list(jobs))))
    return fact_lines(((name, str(value)) for name, value in facts), 22, width)


class AgentDetail(DetailScreen):
    """One session or one subagent, as the Agents tree knows it."""

    FOLLOWS = "sessions"

    def __init__(self, session_id: str, agent_id: str | None) -> None:
        """Args:
        session_id: The session.
        agent_id: One of its subagents, or None for the session itself.
        """
        super().__init__(id="agent-detail")
        self.session_id = session_id
        self.agent_id = agent_id

    def compose(self) -> ComposeResult:
        with Vertical(classes="detail panel") as box:
            box.border_title = "Subagent" if self.agent_id else "Session"
            yield Static("", id="agent-facts")
        yield Footer()

    def follow(self, value: Any) -> None:
        sessions: list[SessionInfo] = value
        session = next((s for s in sessions if s.session_id == self.session_id), None)
        facts = self.query_one("#agent-facts", Static)
        if session is None:
            show_text(facts, Text(f"session {self.session_id} is no longer read"))
            return
        sub = next((s for s in session.subagents if s.id == self.agent_id), None)
        snapshot: Snapshot | None = getattr(self.app, "snapshot", None)
        jobs = launched_by(snapshot.jobs if snapshot else [], self.session_id, self.agent_id)
        show_text(facts, agent_facts(session, sub, time.time(), tuple(jobs), self.text_width))
