"""SessionStart (startup, resume, compact): put back what a restart or a compaction loses.

A compacted main agent forgets that subagents are still working, that caged jobs still run,
what it left uncommitted, that the machine ran out of memory an hour ago, and which alerts are
open. Each fact is read on its own; one that cannot be read is said to be "not read" and the
others still go out. With nothing running it says so, and the rule for heavy commands is
restated every time: it is the rule a compaction dilutes.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from swarmdeck.hooks.contract import added_context
from swarmdeck.hooks.payload import HookInput

if TYPE_CHECKING:
    from swarmdeck.probes.kernel import KernelLog, OomKill
    from swarmdeck.state import StateStore

OOM_WINDOW = 12 * 3600.0
SHOWN = 6


def session_start_answer(hook: HookInput) -> dict[str, Any] | None:
    text = session_start_text(hook)
    return added_context("SessionStart", text) if text else None


def session_start_text(hook: HookInput, now: float | None = None) -> str:
    from swarmdeck.state import StateStore

    now = time.time() if now is None else now
    store = StateStore.open_default(verify=False)
    try:
        facts = [
            _guarded("subagents", lambda: running_subagents_line(hook, store, now)),
            _guarded("caged jobs", lambda: running_jobs_line(store, hook.cwd, now)),
            _guarded("uncommitted changes", lambda: changes_line(hook.cwd)),
            _guarded("OOM kills", lambda: oom_line(now, store)),
            _guarded("alerts", lambda: alerts_line(store)),
            _guarded("findings", lambda: findings_line(store, hook.session_id)),
        ]
    finally:
        store.close()
    said = [fact for fact in facts if fact] or [
        "Nothing of this session is known to be still running: no subagents, no caged jobs,"
        " no open alerts."
    ]
    when = hook.source or "start"
    head = f"swarmdeck control room, at session {when}: what is still going on here."
    tail = "Run heavy commands as `swarmdeck run -- CMD`; `swarmdeck status` shows everything."
    return "\n".join([head, *(f"- {fact}" for fact in said), tail])


def _guarded(what: str, read: Any) -> str | None:
    try:
        return read()
    except Exception as error:  # one unreadable fact must not hide the others
        return f"{what}: not read ({error.__class__.__name__})"


def running_subagents_line(hook: HookInput, store: StateStore, now: float) -> str | None:
    """Subagents of this session still running, from its transcripts and its hook events."""
    from swarmdeck import paths
    from swarmdeck.probes.claude.hook_activity import (
        HOOK_AGENT_WINDOW,
        running_hook_agents,
        unseen_hook_agents,
    )
    from swarmdeck.probes.claude.live_sessions import pid_files
    from swarmdeck.probes.claude.sessions import session_subagents

    parts: list[str] = []
    subagents = session_subagents(hook.transcript_path)
    for sub in subagents:
        if sub.status != "running":
            continue
        age = _age(now - sub.started_at) if sub.started_at else "?"
        doing = f", in {sub.tool_in_flight.name}" if sub.tool_in_flight else ""
        mode = ", background" if sub.background else ""
        parts.append(f'"{sub.description or sub.id}" ({sub.type}, {age}{mode}{doing})')
    if hook.session_id:
        starts = pid_files(Path(paths.claude_dir())).process_starts()
        hooked = running_hook_agents(store, now - HOOK_AGENT_WINDOW, starts).get(
            hook.session_id, []
        )
        for agent in unseen_hook_agents(subagents, hooked):
            age = _age(now - agent.started_at)
            parts.append(f"{agent.agent_id} ({agent.agent_type or 'subagent'}, {age})")
    if not parts:
        return None
    more = f", and {len(parts) - SHOWN} more" if len(parts) > SHOWN else ""
    return f"Subagents still running ({len(parts)}): " + "; ".join(parts[:SHOWN]) + more


def running_jobs_line(store: StateStore, cwd: str | None, now: float) -> str | None:
    """Caged jobs of this host still queued or running, this cwd's first."""
    from swarmdeck.ledger.schema import ACTIVE
    from swarmdeck.probes.memory_book import ledger_jobs
    from swarmdeck.sizes import format_size

    jobs = [job for job in ledger_jobs(store) if job.state in ACTIVE]
    if not jobs:
        return None
    jobs.sort(key=lambda job: (job.cwd != cwd, job.id))
    parts = []
    for job in jobs[:SHOWN]:
        ran = job.runtime(now)
        booked = f", booked {format_size(job.booked)}" if job.booked else ""
        here = "" if job.cwd == cwd else f" in {job.cwd}"
        took = f" {_age(ran)}" if ran is not None else ""
        parts.append(f"#{job.id} {job.label} ({job.state}{took}{booked}){here}")
    more = f", and {len(jobs) - SHOWN} more" if len(jobs) > SHOWN else ""
    return f"Caged jobs still active ({len(jobs)}): " + "; ".join(parts) + more


def changes_line(cwd: str | None) -> str | None:
    from swarmdeck.hooks.git_state import uncommitted_changes

    if not cwd or not Path(cwd).is_dir():
        return None
    changes = uncommitted_changes(cwd)
    if changes.state == "not a repository":
        return None
    if changes.state != "read":
        return f"Uncommitted changes in {cwd}: not read ({changes.reason})"
    if not changes.entries:
        return None
    shown = ", ".join(f"{status} {path}" for status, path in changes.entries[:SHOWN])
    more = ", …" if len(changes.entries) > SHOWN else ""
    count = len(changes.entries)
    return f"Uncommitted changes in {cwd}: {count} file{'s' if count != 1 else ''} ({shown}{more})"


def oom_line(now: float, store: StateStore, **source: Any) -> str | None:
    """OOM kills in the last 12 hours, from the kernel log: the whole machine's, and those in
    the cages of this ledger's slice (`source`: the log to read, as probes/kernel.py takes)."""
    from swarmdeck.probes.kernel import kernel_log

    log = kernel_log(since=now - OOM_WINDOW, until=now, **source)
    if not log.read:
        return None
    # The slice is found (config, owner record, mount table) only when a cage's kill needs it.
    caged = any(kill.inside_a_cap for kill in log.oom_kills)
    return oom_summary(log, ledger_slice(store) if caged else None)


def ledger_slice(store: StateStore) -> str | None:
    """This ledger's slice as the kernel log names it; None when it has none (no cage can be
    set up, or another ledger owns the slice)."""
    from swarmdeck.config import load_config
    from swarmdeck.probes.cgroups import kernel_name
    from swarmdeck.probes.machine import mem_total
    from swarmdeck.probes.memory_book import for_ledger, slice_facts

    facts = for_ledger(slice_facts(load_config(), mem_total()), store.path)
    if facts.problem or facts.slice_path is None:
        return None
    return kernel_name(facts.slice_path)


def in_slice(kill: OomKill, slice_name: str | None) -> bool:
    """A kill at a cage's cap whose victim lived in the slice (or below it)."""
    memcg = kill.task_memcg or kill.oom_memcg
    return (
        kill.inside_a_cap and slice_name is not None
        and (memcg == slice_name or memcg.startswith(slice_name.rstrip("/") + "/"))
    )


def oom_summary(log: KernelLog, slice_name: str | None) -> str | None:
    """Whole-machine kills and kills inside this ledger's cages counted apart (another slice's
    kills, other users' included, are not this ledger's); None when there were none."""
    machine = [kill for kill in log.oom_kills if kill.scope == "machine"]
    inside = [kill for kill in log.oom_kills if in_slice(kill, slice_name)]
    other = [kill for kill in log.oom_kills if kill.scope not in ("machine", "cgroup")]
    counted = machine + inside + other
    if not counted and not log.gpu_out_of_memory:
        return None
    parts = [f"{len(machine)} whole-machine", f"{len(inside)} inside this ledger's cages"]
    if other:
        parts.append(f"{len(other)} other")
    if log.gpu_out_of_memory:
        parts.append(f"{len(log.gpu_out_of_memory)} GPU out-of-memory errors")
    victims = ", ".join(sorted({kill.process for kill in counted}))[:200]
    killed = f" (killed: {victims})" if victims else ""
    return "OOM kills in the last 12 h: " + ", ".join(parts) + killed


def alerts_line(store: StateStore) -> str | None:
    from swarmdeck.probes.store_rows import open_alerts

    alerts = [a for a in open_alerts(store) if a.acknowledged_at is None]
    if not alerts:
        return None
    shown = "; ".join(f"[{a.level}] {a.message}" for a in alerts[:SHOWN])
    more = f"; and {len(alerts) - SHOWN} more" if len(alerts) > SHOWN else ""
    return f"Open alerts ({len(alerts)}): {shown}{more}"


def findings_line(store: StateStore, session_id: str | None) -> str | None:
    """The watchdog's open findings about this session, with what to do about each."""
    from swarmdeck.probes.store_rows import open_findings

    found = [f for f in open_findings(store) if session_id and f.session_id == session_id]
    if not found:
        return None
    shown = "; ".join(
        f"[{f.severity}] {f.rule}: {f.subject} ({f.advice or f.message})" for f in found[:SHOWN]
    )
    more = f"; and {len(found) - SHOWN} more" if len(found) > SHOWN else ""
    return f"Watchdog findings about this session ({len(found)}): {shown}{more}"


def _age(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds >= 3600:
        return f"{seconds // 3600}h{(seconds % 3600) // 60:02d}m"
    if seconds >= 60:
        return f"{seconds // 60}m"
    return f"{seconds}s"
