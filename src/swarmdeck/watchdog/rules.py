"""The watchdog's rules: each a pure function named for what it finds.

Every rule is given the scene (the snapshot and the facts read beside it), the history of recent
scenes, the config and `now`, and returns finding drafts whose key is the rule and its subject
(a job id, a session and tool call, a pid with its start ticks), so the same condition seen on
the next pass is the same finding. Thresholds come from `[watchdog]` in the config.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from swarmdeck.durations import runtime_text
from swarmdeck.ledger.schema import QUEUED
from swarmdeck.sizes import format_size
from swarmdeck.watchdog.findings import CRITICAL, INFO, WARNING, FindingDraft
from swarmdeck.words import counted

if TYPE_CHECKING:
    from swarmdeck.config import Config
    from swarmdeck.probes.claude.sessions import SessionInfo
    from swarmdeck.probes.claude.subagents import SubagentInfo
    from swarmdeck.probes.claude.transcript_facts import ToolCall
    from swarmdeck.probes.memory_book import LedgerJob
    from swarmdeck.watchdog.history import History
    from swarmdeck.watchdog.scene import Scene

Rule = Callable[["Scene", "History", "Config", float], list[FindingDraft]]

ENDED = frozenset({"completed", "failed", "interrupted"})
RESUMED_AFTER = 1.0
"""Transcript activity this many seconds after a Stop means the session took up a new round."""
WAIT_LOOP = re.compile(
    r"\bwhile\b[^\n]*\bdo\b|\buntil\b[^\n]*\bdo\b|\btail\s+(-\w*\s+)*-\w*[fF]|\bwatch\s|"
    r"\bsleep\s+\d+\s*;\s*done\b"
)
"""A shell wait: a while/until loop, `tail -f`, `watch`, a sleep inside a loop."""
BOUNDED = re.compile(r"\btimeout\s|\bfor\s+\w+\s+in\b|--timeout|\bseq\b")
"""What bounds a wait: `timeout`, a counted `for` loop, `--timeout`."""


def _short(session_id: str) -> str:
    return session_id[:8]


def _calls(session: SessionInfo) -> Iterator[tuple[str | None, ToolCall]]:
    """Every tool call in flight in a session: its main thread's and each running subagent's."""
    if session.tool_in_flight is not None:
        yield None, session.tool_in_flight
    for sub in session.subagents:
        if sub.status == "running" and sub.tool_in_flight is not None:
            yield sub.id, sub.tool_in_flight


def _own_call_in_flight(session: SessionInfo, running: list[SubagentInfo]) -> bool:
    """Whether the main thread waits on a call of its own: not the Agent/Task call of a
    foreground subagent that runs, which is that subagent's work, counted as the subagent."""
    call = session.tool_in_flight
    return call is not None and call.tool_use_id not in {s.tool_use_id for s in running}


def _who(session: SessionInfo, agent_id: str | None) -> str:
    base = f"session {_short(session.session_id)}"
    return f"{base} agent {agent_id}" if agent_id else base


def _about_job(job: LedgerJob) -> dict[str, object]:
    """What a finding about a job names: its session, host, ledger id and root process (what a
    kill request for it stops)."""
    return {
        "session_id": job.session_id, "host": job.host, "job_id": job.id,
        "pid": job.pid, "start_ticks": job.start_ticks,
    }


def _job_subject(job: LedgerJob) -> str:
    return f"job #{job.id} {job.label}".strip()


def long_tool_call(
    scene: Scene, history: History, config: Config, now: float
) -> list[FindingDraft]:
    """A single tool call running longer than `watchdog.tool_call_max`. A session waiting for
    the person (a permission prompt, a question) is not running its calls: they count only
    up to when the wait began, and not at all where the wait's start is not known."""
    limit = config.watchdog.tool_call_max
    out = []
    for session in scene.snapshot.sessions:
        if not session.live:
            continue
        until = now
        if session.needs_person:
            if session.waiting_since is None:
                continue
            until = min(now, session.waiting_since)
        for agent_id, call in _calls(session):
            if call.started_at is None or until - call.started_at <= limit:
                continue
            ran = runtime_text(until - call.started_at)
            out.append(FindingDraft(
                key=f"long_tool_call:{session.session_id}:{call.tool_use_id}",
                rule="long_tool_call",
                subject=f"{_who(session, agent_id)}: {call.name} {call.summary}"[:160],
                severity=WARNING,
                message=f"one {call.name} call has run for {ran}",
                advice="look whether it waits on something; run long work as "
                "`swarmdeck run --detach --timeout S -- CMD`",
                session_id=session.session_id,
            ))
    return out


def idle_with_work_in_flight(
    scene: Scene, history: History, config: Config, now: float
) -> list[FindingDraft]:
    """A live session silent for `watchdog.idle_max` while it has subagents, a tool call or
    caged jobs in flight."""
    limit = config.watchdog.idle_max
    jobs_of: dict[str, int] = {}
    for job in scene.running_jobs():
        if job.session_id:
            jobs_of[job.session_id] = jobs_of.get(job.session_id, 0) + 1
    out = []
    for session in scene.snapshot.sessions:
        if not session.live or session.last_activity_at is None:
            continue
        quiet = now - session.last_activity_at
        running = session.running_subagents()
        kinds = (
            (len(running) + len(session.hook_agents), "subagent"),
            (int(_own_call_in_flight(session, running)), "tool call"),
            (jobs_of.get(session.session_id, 0), "caged job"),
        )
        work = sum(count for count, _ in kinds)
        if quiet <= limit or work == 0:
            continue
        what = ", ".join(counted(count, noun, "a") for count, noun in kinds if count)
        out.append(FindingDraft(
            key=f"idle_with_work_in_flight:{session.session_id}",
            rule="idle_with_work_in_flight",
            subject=f"session {_short(session.session_id)} ({session.cwd or '?'})",
            severity=WARNING,
            message=f"no activity for {runtime_text(quiet)} with {counted(work, 'thing')}"
            f" in flight ({what})",
            advice="look at the session: it may wait for a person or for a stalled call",
            session_id=session.session_id,
        ))
    return out


def wait_loop_without_timeout(
    scene: Scene, history: History, config: Config, now: float
) -> list[FindingDraft]:
    """A running Bash call that waits in a loop (`while`/`until`, `tail -f`, polling) with no
    `timeout` bounding it."""
    out = []
    for session in scene.snapshot.sessions:
        if not session.live:
            continue
        for agent_id, call in _calls(session):
            if call.name != "Bash" or not WAIT_LOOP.search(call.summary):
                continue
            if BOUNDED.search(call.summary):
                continue
            out.append(FindingDraft(
                key=f"wait_loop_without_timeout:{session.session_id}:{call.tool_use_id}",
                rule="wait_loop_without_timeout",
                subject=f"{_who(session, agent_id)}: {call.summary}"[:160],
                severity=WARNING,
                message="a wait loop with no timeout: it never ends if its condition never comes",
                advice="bound it: `timeout 600 sh -c '…'`, or wait with `swarmdeck watch --wake`",
                session_id=session.session_id,
            ))
    return out


def repeated_unchanged_output(
    scene: Scene, history: History, config: Config, now: float
) -> list[FindingDraft]:
    """The same command run `watchdog.repeat_max` times in a row, with the same output each time."""
    times = config.watchdog.repeat_max
    out = []
    for session_id, runs in scene.bash_runs.items():
        last = runs[-times:]
        if len(last) < times:
            continue
        if len({(run.command, run.output_digest) for run in last}) != 1:
            continue
        command = last[-1].command
        out.append(FindingDraft(
            key=f"repeated_unchanged_output:{session_id}:{last[0].tool_use_id}",
            rule="repeated_unchanged_output",
            subject=f"session {_short(session_id)}: {command.splitlines()[0]}"[:160],
            severity=INFO,
            message=f"ran {times} times in a row with the same output each time",
            advice="polling by hand: wait with `swarmdeck watch --wake` or change the approach",
            session_id=session_id,
        ))
    return out


def output_not_growing(
    scene: Scene, history: History, config: Config, now: float
) -> list[FindingDraft]:
    """A running job (here, on a peer or on the Slurm cluster) whose output file has not grown
    for `watchdog.output_stall` seconds."""
    limit = config.watchdog.output_stall
    out = []
    for job in scene.running_jobs() + scene.cluster_jobs:
        output = scene.outputs.get(job.id)
        if output is None or now - output.mtime <= limit:
            continue
        out.append(FindingDraft(
            key=f"output_not_growing:job{job.id}",
            rule="output_not_growing",
            subject=_job_subject(job),
            severity=WARNING,
            message=f"its output has not grown for {runtime_text(now - output.mtime)}"
            f" ({format_size(output.size)})",
            advice=f"look at {job.output_path}; request a kill if it is stuck",
            **_about_job(job),
        ))
    return out


def round_ended_without_background(
    scene: Scene, history: History, config: Config, now: float
) -> list[FindingDraft]:
    """A live main session that ended its round with nothing running in the background: nothing
    will wake it by itself."""
    out = []
    for session_id, stop in scene.stops.items():
        session = scene.session(session_id)
        if session is None or not session.live or stop.background_tasks > 0:
            continue
        if (session.last_activity_at or 0.0) > stop.at + RESUMED_AFTER:
            continue  # a new round began after the Stop (a prompt came)
        out.append(FindingDraft(
            key=f"round_ended_without_background:{session_id}",
            rule="round_ended_without_background",
            subject=f"session {_short(session_id)} ({session.cwd or '?'})",
            severity=INFO,
            message="its round ended with nothing in the background: it will not wake by itself",
            advice=f"keep `swarmdeck watch --wake --session {session_id}` running in the "
            "background, so a finding wakes it",
            session_id=session_id,
        ))
    return out


def heavy_without_run(
    scene: Scene, history: History, config: Config, now: float
) -> list[FindingDraft]:
    """A heavy command (`hooks.heavy`, or the user's `hooks.heavy_patterns`) that ran without
    `swarmdeck run`, read by the hooks' shell parser (hooks/heavy.py)."""
    from swarmdeck.hooks.heavy import runs_heavy_uncaged

    out = []
    for ran in scene.ran_commands:
        if not runs_heavy_uncaged(
            ran.command, config.hooks.heavy, config.hooks.heavy_patterns, ran.cwd
        ):
            continue
        session = scene.session(ran.session_id)
        who = _who(session, ran.agent_id) if session else f"session {_short(ran.session_id)}"
        out.append(FindingDraft(
            key=f"heavy_without_run:{ran.session_id}:{ran.tool_use_id}",
            rule="heavy_without_run",
            subject=f"{who}: {ran.command.splitlines()[0]}"[:160],
            severity=WARNING,
            message="a heavy command ran outside the memory cage, unbooked",
            advice="run it as `swarmdeck run -- CMD`",
            session_id=ran.session_id,
        ))
    return out


def resident_over_line(
    scene: Scene, history: History, config: Config, now: float
) -> list[FindingDraft]:
    """A supervised process (a caged job's, a live session's) holding more resident memory than
    `watchdog.rss_line`."""
    mem_total = scene.snapshot.hosts[0].memory.total if scene.snapshot.hosts else 0
    line = config.watchdog.rss_line.resolve(mem_total)
    host = scene.snapshot.hosts[0].name if scene.snapshot.hosts else None
    out = []
    for proc in scene.processes:
        if proc.rss <= line:
            continue
        owner = f"job #{proc.job_id}" if proc.job_id is not None else (
            f"session {_short(proc.session_id or '')}"
        )
        out.append(FindingDraft(
            key=f"resident_over_line:{proc.pid}:{proc.start_ticks}",
            rule="resident_over_line",
            subject=f"{owner}: pid {proc.pid} {proc.comm}",
            severity=CRITICAL if proc.rss > 2 * line else WARNING,
            message=f"holds {format_size(proc.rss)} resident (line {format_size(line)})",
            advice="look whether it leaks; request a kill if it runs away",
            session_id=proc.session_id,
            host=host,
            job_id=proc.job_id,
            pid=proc.pid,
            start_ticks=proc.start_ticks,
        ))
    return out


def threads_underused(
    scene: Scene, history: History, config: Config, now: float
) -> list[FindingDraft]:
    """A long run using under `watchdog.thread_use_fraction` of its declared threads on both
    figures (cores in use, threads at once) in every look the history has of it, unless its
    serial marker says why."""
    fraction = config.watchdog.thread_use_fraction
    out = []
    for job in scene.running_jobs():
        ran = job.runtime(now)
        if not job.threads or job.threads < 2 or ran is None or ran <= config.watchdog.long_run:
            continue
        if job.serial_reason:
            continue
        looks = [job.usage, *_past_usage(history, job.id)]
        figures = [u for u in looks if u is not None]
        low = fraction * job.threads
        if not figures or any(
            u.cores_in_use >= low or u.threads_at_once >= low for u in figures
        ):
            continue
        use = figures[0]
        out.append(FindingDraft(
            key=f"threads_underused:job{job.id}",
            rule="threads_underused",
            subject=_job_subject(job),
            severity=INFO,
            message=f"declared {job.threads} threads, uses {use.cores_in_use:.1f} cores,"
            f" {use.threads_at_once:.1f} threads at once",
            advice=f"rerun it declaring fewer threads (--threads {job.threads} now), or write"
            f" why it runs serially to $SWARMDECK_SERIAL_FILE; it runs `{shlex.join(job.argv)}`",
            **_about_job(job),
        ))
    return out


def _past_usage(history: History, job_id: int) -> Iterator[object]:
    for look in history:
        usage = look.usage.get(job_id)
        if usage is not None:
            yield usage


def job_outlived_subagent(
    scene: Scene, history: History, config: Config, now: float
) -> list[FindingDraft]:
    """A caged job of a subagent still running after that subagent handed back."""
    out = []
    for job in scene.running_jobs():
        if not job.session_id or not job.agent_id:
            continue
        session = scene.session(job.session_id)
        if session is None:
            continue
        sub = next((s for s in session.subagents if s.id == job.agent_id), None)
        if sub is None or sub.status not in ENDED:
            continue
        out.append(FindingDraft(
            key=f"job_outlived_subagent:job{job.id}",
            rule="job_outlived_subagent",
            subject=f"{_job_subject(job)} of agent {job.agent_id}",
            severity=WARNING,
            message=f"still running after its subagent {sub.status}",
            advice="no one will read its result: request a kill unless the main agent wants it",
            **_about_job(job),
        ))
    return out


def scratch_copy_outlived_subagent(
    scene: Scene, history: History, config: Config, now: float
) -> list[FindingDraft]:
    """A work directory a subagent claimed (`swarmdeck lock claim`), still in use by some
    process after that subagent handed back."""
    ended = {
        sub.id: session
        for session in scene.snapshot.sessions
        for sub in session.subagents
        if sub.status in ENDED
    }
    out = []
    for row in scene.snapshot.locks:
        owner = getattr(row, "owner", None)
        used_by = getattr(row, "used_by", ())
        if owner is None or not used_by or owner.session not in ended:
            continue
        session = ended[owner.session]
        out.append(FindingDraft(
            key=f"scratch_copy_outlived_subagent:{row.directory}",
            rule="scratch_copy_outlived_subagent",
            subject=f"{row.directory} of agent {owner.session}",
            severity=WARNING,
            message=f"still in use by process {', '.join(map(str, used_by))} after its"
            " subagent handed back",
            advice="stop what runs there, then `swarmdeck lock cleanup`",
            session_id=session.session_id,
        ))
    return out


def queued_while_peer_fits(
    scene: Scene, history: History, config: Config, now: float
) -> list[FindingDraft]:
    """A job queued on this host's memory while a configured peer has room for it now."""
    queued = [job for job in scene.snapshot.jobs if job.state == QUEUED and job.booked]
    out = []
    for job in queued:
        for peer in scene.snapshot.peers:
            if peer.state != "read" or peer.book is None:
                continue
            room = peer.book.usable
            if room < (job.booked or 0):
                continue
            command = shlex.join(job.argv)
            out.append(FindingDraft(
                key=f"queued_while_peer_fits:job{job.id}:{peer.name}",
                rule="queued_while_peer_fits",
                subject=_job_subject(job),
                severity=INFO,
                message=f"queued here for {format_size(job.booked or 0)} while {peer.name} has"
                f" {format_size(room)} free",
                advice=f"`swarmdeck peer run {peer.name} -- {command}`",
                session_id=job.session_id,
                host=job.host,
                job_id=job.id,
            ))
            break
    return out


MEMORY_KILLS = {250: "hit its own memory cap", 254: "was killed because the shared slice was full"}
"""The exit codes by which the memory cage, not the command, ended a job, and what each says."""


def killed_for_memory(
    scene: Scene, history: History, config: Config, now: float
) -> list[FindingDraft]:
    """A recent job that the memory cage ended (250 or 254): the agent that ran it learns it
    from its exit code only, the person from this finding; it stays while the job is among the
    recent ones, until acknowledged."""
    out = []
    for job in scene.snapshot.jobs:
        why = MEMORY_KILLS.get(job.exit_code or 0)
        if why is None or job.ended_at is None:
            continue
        figures = f"booked {format_size(job.booked or 0)}, peak {format_size(job.peak or 0)}"
        rerun = (
            "rerun it with a larger --cap" if job.exit_code == 250
            else "rerun it when the slice has room; its next run books its cap"
            if job.hit_ceiling else "rerun it: it kept to its booking"
        )
        out.append(FindingDraft(
            key=f"killed_for_memory:job{job.id}",
            rule="killed_for_memory",
            subject=_job_subject(job),
            severity=WARNING,
            message=f"{why} (exit {job.exit_code}; {figures})",
            advice=rerun,
            # No job_id: a finding about a job is hidden once the job ends, and this one is
            # about its end; nor is there anything left to stop.
            session_id=job.session_id,
            host=job.host,
        ))
    return out


RULES: tuple[Rule, ...] = (
    long_tool_call,
    idle_with_work_in_flight,
    wait_loop_without_timeout,
    repeated_unchanged_output,
    output_not_growing,
    round_ended_without_background,
    heavy_without_run,
    resident_over_line,
    threads_underused,
    job_outlived_subagent,
    scratch_copy_outlived_subagent,
    queued_while_peer_fits,
    killed_for_memory,
)
"""Every rule, in the order a pass runs them."""


def evaluate(scene: Scene, history: History, config: Config, now: float) -> list[FindingDraft]:
    """Every rule's drafts for this scene."""
    return [draft for rule in RULES for draft in rule(scene, history, config, now)]
