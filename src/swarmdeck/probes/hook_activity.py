"""What the recorded hook events say is happening now, ahead of the transcripts.

Claude Code writes transcripts asynchronously; a hook call is recorded the moment it happens.
A SubagentStart without its SubagentStop is a subagent still running, across every session
whose hooks are installed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from swarmdeck.state import StateStore


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


def hook_agents(store: StateStore, since: float) -> list[HookAgent]:
    """Subagents started since `since`, in start order, with their stop time if they stopped."""
    with store.read() as conn:
        rows = conn.execute(
            "SELECT event, session_id, agent_id, json_extract(payload, '$.agent_type') AS type,"
            " received_at FROM hook_events"
            " WHERE event IN ('SubagentStart', 'SubagentStop') AND received_at >= ?"
            " AND agent_id IS NOT NULL AND session_id IS NOT NULL ORDER BY id",
            (since,),
        ).fetchall()
    agents: dict[tuple[str, str], HookAgent] = {}
    for row in rows:
        key = (row["session_id"], row["agent_id"])
        if row["event"] == "SubagentStart":
            agents[key] = HookAgent(key[0], key[1], row["type"], row["received_at"], None)
        elif key in agents:
            known = agents[key]
            agents[key] = HookAgent(
                known.session_id, known.agent_id, known.agent_type, known.started_at,
                row["received_at"],
            )
    return list(agents.values())


def running_hook_agents(store: StateStore, since: float) -> dict[str, list[HookAgent]]:
    """Subagents started and not stopped, by session id."""
    running: dict[str, list[HookAgent]] = {}
    for agent in hook_agents(store, since):
        if agent.running:
            running.setdefault(agent.session_id, []).append(agent)
    return running
