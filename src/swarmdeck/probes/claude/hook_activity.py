"""What the recorded hook events say is happening now, ahead of the transcripts.

Claude Code writes transcripts asynchronously; a hook call is recorded the moment it happens
(every read here goes through hook_events.read_hook_events, which folds the spool first). From
the events: subagents still running (a SubagentStart without its SubagentStop, or a task a Stop
event lists as outstanding), sessions waiting for the person, sessions that ended.

The transcripts and the hook events tell of the same agents: `unseen_hook_agents` is the one
place that decides which hook-recorded agents the transcripts do not count already, for every
count there is (the sessions probe and its views, the SessionStart summary, the dispatch guard,
the watchdog).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from swarmdeck.hook_events import ASKING_NOTIFICATIONS, read_hook_events
from swarmdeck.probes.claude.subagents import SubagentInfo, predates_process
from swarmdeck.probes.claude.transcript_fields import is_internal_agent

if TYPE_CHECKING:
    from swarmdeck.state import StateStore

RUNNING_TASK = frozenset({"running", "pending", "in_progress"})
HOOK_AGENT_WINDOW = 24 * 3600.0
"""How far back hook events of subagents (started, stopped, waiting) are looked at: the Agents
panel, the dispatch guard and SessionStart must count the same running agents."""
ASKING = frozenset(ASKING_NOTIFICATIONS)
"""Notification types that wait for the person (hook_events.py keeps the list)."""


@dataclass(frozen=True)
class HookAgent:
    """A subagent known from SubagentStart/SubagentStop hook events."""

    session_id: str
    agent_id: str
    agent_type: str | None
    started_at: float
    stopped_at: float | None

    @property
    def running(self) -> bool:
        return self.stopped_at is None


@dataclass(frozen=True)
class HookWait:
    """A session's last hook event: a Notification that asks for the person."""

    session_id: str
    what: str
    """Its message, or its type when it has none."""
    since: float


def hook_waits(store: StateStore, since: float) -> dict[str, HookWait]:
    """The sessions whose last hook event since `since` is a Notification asking for the
    person, by session id: any later event of the session (the tool call that was allowed, the
    next prompt, a Stop, its end) means the person answered.

    A Notification asking for the person (a permission prompt, an idle prompt, a question), or a
    PermissionRequest (the dialog opening, seconds before its Notification), is what a Claude
    Code that writes no status into its pid file says only this way, and what any version says
    at once."""
    with read_hook_events(store) as conn:
        rows = conn.execute(
            "SELECT n.session_id, n.received_at, n.event, n.tool_name,"
            " json_extract(n.payload, '$.notification_type') AS kind,"
            " json_extract(n.payload, '$.message') AS message,"
            " json_extract(n.payload, '$.tool_input.command') AS command"
            " FROM hook_events n"
            " WHERE n.event IN ('Notification', 'PermissionRequest') AND n.received_at >= ?"
            " AND n.session_id IS NOT NULL"
            " AND NOT EXISTS (SELECT 1 FROM hook_events l WHERE l.session_id = n.session_id"
            " AND l.received_at >= n.received_at AND l.id > n.id)",
            (since,),
        ).fetchall()
    waits = {}
    for row in rows:
        if row["event"] == "PermissionRequest":
            what = _permission_text(row["tool_name"], row["command"])
        elif row["kind"] in ASKING:
            message = row["message"]
            what = message if isinstance(message, str) and message.strip() else row["kind"]
        else:
            continue
        waits[row["session_id"]] = HookWait(row["session_id"], what.strip(), row["received_at"])
    return waits


def _permission_text(tool: Any, command: Any) -> str:
    """What a PermissionRequest asks for, in a line: the tool, and a Bash call's command."""
    name = tool if isinstance(tool, str) and tool else "a tool"
    if isinstance(command, str) and command.strip():
        return f"permission for {name}: {command.strip().splitlines()[0][:120]}"
    return f"permission for {name}"


def ended_sessions(store: StateStore, since: float) -> dict[str, float]:
    """When each session whose latest hook event since `since` is a SessionEnd ended, by
    session id: over at once, whatever its pid file or its quiet transcript would say."""
    with read_hook_events(store) as conn:
        rows = conn.execute(
            "SELECT e.session_id, e.received_at FROM hook_events e"
            " WHERE e.event = 'SessionEnd' AND e.received_at >= ? AND e.session_id IS NOT NULL"
            " AND NOT EXISTS (SELECT 1 FROM hook_events l WHERE l.session_id = e.session_id"
            " AND l.id > e.id)",
            (since,),
        ).fetchall()
    return {row["session_id"]: row["received_at"] for row in rows}


def last_hook_events(store: StateStore, since: float) -> dict[str, float]:
    """When each session's latest hook event since `since` came (its subagents' included), by
    session id: how lately a session whose liveness no pid file tells was active."""
    with read_hook_events(store) as conn:
        rows = conn.execute(
            "SELECT session_id, max(received_at) AS at FROM hook_events"
            " WHERE received_at >= ? AND session_id IS NOT NULL GROUP BY session_id",
            (since,),
        ).fetchall()
    return {row["session_id"]: row["at"] for row in rows}


def hook_agents(store: StateStore, since: float) -> list[HookAgent]:
    """Subagents started since `since`, in start order, with their stop time if they stopped.

    A Stop event (2.1.145+) also lists the session's background tasks still outstanding, which
    covers subagents whose SubagentStart was missed (hooks installed after they started) and
    ends those whose SubagentStop was. Claude Code's own helpers (compaction, prompt
    suggestions, internal one-turn forks) raise the same events; they are no one's subagents and
    are left out."""
    with read_hook_events(store) as conn:
        rows = conn.execute(
            "SELECT event, session_id, agent_id, received_at,"
            " json_extract(payload, '$.agent_type') AS type,"
            " json_extract(payload, '$.background_tasks') AS tasks"
            " FROM hook_events"
            " WHERE event IN ('SubagentStart', 'SubagentStop', 'Stop') AND received_at >= ?"
            " AND session_id IS NOT NULL ORDER BY id",
            (since,),
        ).fetchall()
    agents: dict[tuple[str, str], HookAgent] = {}
    for row in rows:
        session, at = row["session_id"], row["received_at"]
        if row["event"] == "Stop":
            _background_tasks(agents, session, at, row["tasks"])
            continue
        if row["agent_id"] is None or _helper(row["agent_id"], row["type"]):
            continue
        key = (session, row["agent_id"])
        if row["event"] == "SubagentStart":
            agents[key] = HookAgent(session, row["agent_id"], row["type"], at, None)
        elif key in agents and agents[key].running:
            agents[key] = replace(agents[key], stopped_at=at)
    return list(agents.values())


def _helper(agent_id: str, agent_type: str | None) -> bool:
    """One of Claude Code's own helpers: a helper's id, or an agent type sent empty.

    A dispatched subagent always has a type (`general-purpose` when none was asked for); the
    internal forks send `agent_type: ""`. A missing type (None) says nothing either way.
    """
    return is_internal_agent(agent_id) or agent_type == ""


def _background_tasks(
    agents: dict[tuple[str, str], HookAgent], session: str, at: float, tasks: Any
) -> None:
    """Take in a main-thread Stop's `background_tasks`: the session's tasks still outstanding.

    A subagent listed (without a status, or with a running one) runs; one listed as ended, or
    left out of the list, has ended: when the main turn stops, only background subagents can
    still run, and the list names them all. A Stop without the list (older versions) says
    nothing.
    """
    try:
        entries = json.loads(tasks) if isinstance(tasks, str) else None
    except ValueError:
        return
    if not isinstance(entries, list):
        return
    out: set[str] = set()
    for entry in entries:
        if not isinstance(entry, dict) or entry.get("type") != "subagent":
            continue
        agent_id = entry.get("id")
        if not isinstance(agent_id, str) or not agent_id or is_internal_agent(agent_id):
            continue
        status = entry.get("status")
        if status is not None and status not in RUNNING_TASK:
            continue
        out.add(agent_id)
        known = agents.get((session, agent_id))
        if known is None or not known.running:
            kind = entry.get("agent_type") if isinstance(entry.get("agent_type"), str) else None
            agents[(session, agent_id)] = HookAgent(session, agent_id, kind, at, None)
    for (owner, agent_id), agent in list(agents.items()):
        if owner == session and agent.running and agent_id not in out:
            agents[(owner, agent_id)] = replace(agent, stopped_at=at)


def running_hook_agents(
    store: StateStore, since: float, process_starts: Mapping[str, float | None] | None = None
) -> dict[str, list[HookAgent]]:
    """Subagents started and not stopped, by session id.

    `process_starts` maps a session to when its live process started: a subagent started
    before it died with an earlier process of the session (`claude --resume`), whose last
    SubagentStop never came.
    """
    starts = process_starts or {}
    running: dict[str, list[HookAgent]] = {}
    for agent in hook_agents(store, since):
        if agent.running and not predates_process(agent.started_at, starts.get(agent.session_id)):
            running.setdefault(agent.session_id, []).append(agent)
    return running


def unseen_hook_agents(
    subagents: Iterable[SubagentInfo], hooked: Iterable[HookAgent]
) -> list[HookAgent]:
    """The hook-recorded agents (`hooked`, in their order) that the transcripts' `subagents`
    do not count already.

    A transcript counts an agent it names by its id. It also counts one it does not name yet:
    a running dispatch whose agent's own file is not written (its id is still the dispatch's
    tool_use_id) while the SubagentStart hook has already come. Each such dispatch stands for
    one hook agent of its type (or of a type the hook did not say), the earliest started at or
    after the dispatch if there is one, else the earliest.
    """
    subagents = list(subagents)
    known = {sub.id for sub in subagents}
    left = [agent for agent in hooked if agent.agent_id not in known]
    unlinked = sorted(
        (sub for sub in subagents if sub.status == "running" and not sub.agent_known),
        key=lambda sub: sub.started_at or 0.0,
    )
    for dispatch in unlinked:
        fits = [a for a in left if a.agent_type is None or a.agent_type == dispatch.type]
        if not fits:
            continue
        after = [a for a in fits if a.started_at >= (dispatch.started_at or 0.0)]
        left.remove(min(after or fits, key=lambda a: a.started_at))
    return left
