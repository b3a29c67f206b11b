"""Detail views opened with `enter` on a row, closed with `esc`: one job, one session or agent.

A detail view follows the app's snapshots while it is open (a running job's figures and the
last lines of its output change under the reader's eyes); everything in it comes from the
snapshot and the job's own output file, so it shows the same after a restart.
"""

from __future__ import annotations

import os
import shlex
import time
from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Label, Static

from swarmdeck.app.bar import BarSegment, StackedBar
from swarmdeck.app.quiet import show_text
from swarmdeck.durations import NONE, runtime_text
from swarmdeck.probes.claude.sessions import SessionInfo
from swarmdeck.probes.claude.subagents import SubagentInfo
from swarmdeck.probes.ledger import LedgerJob
from swarmdeck.sizes import format_size
from swarmdeck.snapshot import Snapshot
from swarmdeck.views.cells import size_cell
from swarmdeck.views.jobs import cores_cell, state_cell

OUTPUT_LINES = 20
"""How many of a job's last output lines the detail view shows."""
OUTPUT_TAIL = 16 * 1024
"""Bytes read from the end of a job's output file, enough for those lines."""


def last_lines(path: str | None, count: int = OUTPUT_LINES) -> str:
    """The last `count` lines of a job's output, or why there are none."""
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
    return "\n".join(lines[-count:]) if lines else "(no output yet)"


def memory_segments(job: LedgerJob) -> tuple[tuple[BarSegment, ...], int]:
    """A job's memory as a bar over its cap: now, the peak beyond now, the booking beyond it."""
    current = job.current or 0
    peak = max(job.peak or 0, current)
    booked = job.booked or 0
    total = max(job.cap or 0, booked, peak, 1)
    return (
        BarSegment(current, "bold green", "now"),
        BarSegment(peak - current, "yellow", "peak", "▓"),
        BarSegment(max(0, booked - peak), "blue", "booked", "▒"),
    ), total


def job_facts(job: LedgerJob, now: float) -> Text:
    """Everything the ledger knows of a job, one fact a line."""
    text = Text()
    facts = (
        ("state", state_cell(job)),
        ("command", shlex.join(job.argv) or NONE),
        ("cwd", job.cwd or NONE),
        ("host", job.host),
        ("cage", job.cgroup or NONE),
        ("runtime", runtime_text(job.runtime(now))),
        ("cores", cores_cell(job)),
        ("memory", f"now {size_cell(job.current)} · peak {size_cell(job.peak)}"
                   f"{' (ceiling: it reached its cap)' if job.hit_ceiling else ''}"
                   f" · booked {size_cell(job.booked)} · cap {size_cell(job.cap)}"),
        ("admitted via", job.admitted_via or NONE),
        ("oom adj", NONE if job.oom_score_adj is None else str(job.oom_score_adj)),
        ("output", job.output_path or NONE),
    )
    for name, value in facts:
        text.append(f"{name:>13}  ", style="bold")
        text.append_text(value if isinstance(value, Text) else Text(value))
        text.append("\n")
    return text


class DetailScreen(Screen[None]):
    """A full screen about one thing; `esc` goes back to the panels. It follows the app's
    attribute named by FOLLOWS (`snapshot`, or `sessions`)."""

    BINDINGS = [Binding("escape", "app.pop_screen", "Back")]
    FOLLOWS: ClassVar[str] = "snapshot"

    def on_mount(self) -> None:
        self.watch(self.app, self.FOLLOWS, self._follow, init=True)

    def _follow(self, value: Any) -> None:
        if value is not None:
            self.follow(value)

    def follow(self, value: Any) -> None:
        """Redraw from the app's latest value of FOLLOWS; each view says how (the base shows
        nothing)."""


class JobDetail(DetailScreen):
    """One job: its command and cage, memory now/peak/booked/cap, the end of its output."""

    def __init__(self, job_id: int) -> None:
        """Args:
        job_id: The ledger id of the job.
        """
        super().__init__(id="job-detail")
        self.job_id = job_id

    def compose(self) -> ComposeResult:
        with Vertical(classes="detail panel") as box:
            box.border_title = f"Job {self.job_id}"
            yield Static("", id="job-facts")
            with Horizontal(classes="bar-line"):
                yield Label("memory", classes="bar-label")
                yield StackedBar(id="job-memory")
                yield Label(" █ now ▓ peak ▒ booked, of its cap", classes="bar-figures")
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
        show_text(facts, job_facts(job, time.time()))
        bar = self.query_one("#job-memory", StackedBar)
        bar.segments, bar.total = memory_segments(job)
        show_text(self.query_one("#job-output", Static), Text(last_lines(job.output_path)))


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
        f"#{job.id} {job.label} · {state_cell(job).plain} · {job.host}" for job in jobs
    )


def agent_facts(
    session: SessionInfo, sub: SubagentInfo | None, now: float, jobs: tuple[LedgerJob, ...] = ()
) -> Text:
    """A session, or one of its subagents, one fact a line, and the jobs it launched."""
    text = Text()
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
    for name, value in facts:
        text.append(f"{name:>22}  ", style="bold")
        text.append(str(value).replace("\n", "\n" + " " * 24) + "\n")
    return text


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
        show_text(facts, agent_facts(session, sub, time.time(), tuple(jobs)))
