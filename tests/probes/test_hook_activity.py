"""Subagents from recorded hook events: start/stop pairs and a Stop's background tasks."""

from __future__ import annotations

from swarmdeck.hooks.payload import HookInput
from swarmdeck.hooks.record import record_event
from swarmdeck.probes.claude.hook_activity import (
    HookAgent,
    hook_agents,
    running_hook_agents,
    unseen_hook_agents,
)
from swarmdeck.probes.claude.subagents import SubagentInfo
from swarmdeck.state import StateStore


def _event(event: str, at: float, **fields) -> None:
    record_event(HookInput(event, {"hook_event_name": event, **fields}), now=at)


def test_start_without_stop_is_running_and_stop_ends_it() -> None:
    _event("SubagentStart", 10, session_id="s1", agent_id="a1", agent_type="Explore")
    _event("SubagentStart", 11, session_id="s1", agent_id="a2", agent_type="Plan")
    _event("SubagentStop", 20, session_id="s1", agent_id="a1", agent_type="Explore")
    store = StateStore.open_default()
    agents = {a.agent_id: a for a in hook_agents(store, 0)}
    assert agents["a1"].stopped_at == 20 and agents["a2"].running
    assert [a.agent_id for a in running_hook_agents(store, 0)["s1"]] == ["a2"]
    assert running_hook_agents(store, 15) == {}


def test_stop_background_tasks_add_and_end_subagents() -> None:
    _event("SubagentStart", 10, session_id="s1", agent_id="a1")
    _event(
        "Stop",
        30,
        session_id="s1",
        stop_hook_active=False,
        background_tasks=[
            {"id": "a1", "type": "subagent", "status": "completed", "description": "d"},
            {"id": "a9", "type": "subagent", "status": "running", "agent_type": "reviewer"},
            {"id": "b3", "type": "shell", "status": "running"},
        ],
    )
    running = running_hook_agents(StateStore.open_default(), 0)
    assert [(a.agent_id, a.agent_type) for a in running["s1"]] == [("a9", "reviewer")]


def test_claude_codes_own_helper_agents_are_not_subagents() -> None:
    """Compaction and prompt-suggestion helpers, and the internal one-turn forks whose
    SubagentStart/SubagentStop name no agent type (anthropics/claude-code#91910)."""
    _event("SubagentStart", 10, session_id="s1", agent_id="acompact-7aad72", agent_type="")
    _event("SubagentStart", 11, session_id="s1", agent_id="aprompt_suggestion-23e3e5")
    _event("SubagentStart", 12, session_id="s1", agent_id="a3f09c1d2e4b5a687", agent_type="")
    _event("SubagentStart", 13, session_id="s1", agent_id="a5b6c7d8e9f0a1b2c", agent_type="Plan")
    _event(
        "SubagentStop",
        14,
        session_id="s1",
        agent_id="a77e1f0c9d8b7a6e5",
        agent_type="",
        stop_hook_active=False,
        agent_transcript_path="/never/created/agent-a77e1f0c9d8b7a6e5.jsonl",
        last_assistant_message="summary",
    )
    running = running_hook_agents(StateStore.open_default(), 0)
    assert [a.agent_id for a in running["s1"]] == ["a5b6c7d8e9f0a1b2c"]


def test_a_stop_lists_every_background_task_still_out() -> None:
    """A main-thread Stop (2.1.145+) lists the tasks still outstanding, some without a status:
    a subagent it leaves out has ended even if its SubagentStop was missed; a Stop without
    the field says nothing."""
    _event("SubagentStart", 10, session_id="s1", agent_id="a1", agent_type="Explore")
    _event("SubagentStart", 11, session_id="s1", agent_id="a2", agent_type="Plan")
    _event("SubagentStart", 12, session_id="s2", agent_id="a3", agent_type="Plan")
    _event("Stop", 20, session_id="s1", stop_hook_active=False)
    store = StateStore.open_default()
    assert sorted(a.agent_id for a in running_hook_agents(store, 0)["s1"]) == ["a1", "a2"]
    _event("Stop", 30, session_id="s1", stop_hook_active=False,
           background_tasks=[{"id": "a2", "type": "subagent"}, {"id": "b1", "type": "shell"}])
    running = running_hook_agents(store, 0)
    assert [a.agent_id for a in running["s1"]] == ["a2"]
    assert [a.agent_id for a in running["s2"]] == ["a3"]
    _event("Stop", 40, session_id="s1", stop_hook_active=False, background_tasks=[])
    assert "s1" not in running_hook_agents(store, 0)


def test_a_long_background_list_is_kept_whole_or_not_at_all() -> None:
    """Trimming a stored Stop must not drop entries: a left-out subagent reads as ended."""
    for n in range(60):
        _event("SubagentStart", 10 + n, session_id="s1", agent_id=f"a{n:02d}", agent_type="Plan")
    tasks = [{"id": f"a{n:02d}", "type": "subagent", "status": "running",
              "description": "d" * 40} for n in range(60)]
    _event("Stop", 100, session_id="s1", stop_hook_active=False, background_tasks=tasks)
    store = StateStore.open_default()
    assert len(running_hook_agents(store, 0)["s1"]) == 60
    huge = tasks + [{"id": f"b{n}", "type": "subagent", "status": "running",
                     "description": "x" * 400} for n in range(300)]
    _event("Stop", 200, session_id="s1", stop_hook_active=False,
           background_tasks=huge[60:])
    assert len(running_hook_agents(store, 0)["s1"]) == 60


def _dispatched(tool_use_id: str, kind: str, started_at: float, agent_id: str | None = None,
                status: str = "running") -> SubagentInfo:
    """A subagent as the transcripts show it: linked to its agent's id, or only its dispatch."""
    return SubagentInfo(
        id=agent_id or tool_use_id, tool_use_id=tool_use_id, description="d", type=kind,
        status=status, background=False, started_at=started_at, ended_at=None,
        last_activity_at=started_at, tool_calls=0, tokens=None, parent_id=None,
        tool_in_flight=None, transcript_path=None,
    )


def _hooked(agent_id: str, kind: str | None, started_at: float) -> HookAgent:
    return HookAgent("s1", agent_id, kind, started_at, None)


def test_a_hook_agent_a_transcript_names_is_not_unseen() -> None:
    seen = [_dispatched("toolu_1", "Explore", 10, agent_id="a1")]
    assert unseen_hook_agents(seen, [_hooked("a1", "Explore", 11)]) == []


def test_a_running_dispatch_with_no_transcript_yet_stands_for_one_hook_agent_of_its_type() -> None:
    """The SubagentStart hook comes before the agent's own file: the dispatch and the hook's
    record are one agent, counted once."""
    subagents = [_dispatched("toolu_1", "Explore", 10), _dispatched("toolu_2", "Plan", 12)]
    hooked = [_hooked("a1", "Explore", 11), _hooked("a2", "Plan", 13),
              _hooked("a3", "Plan", 14), _hooked("a4", "code-reviewer", 15)]
    assert [a.agent_id for a in unseen_hook_agents(subagents, hooked)] == ["a3", "a4"]


def test_a_dispatch_that_ended_or_is_linked_stands_for_no_hook_agent() -> None:
    subagents = [_dispatched("toolu_1", "Explore", 10, status="completed"),
                 _dispatched("toolu_2", "Explore", 11, agent_id="a9")]
    hooked = [_hooked("a1", "Explore", 12)]
    assert unseen_hook_agents(subagents, hooked) == hooked


def test_a_hook_agent_of_unknown_type_may_be_any_dispatch() -> None:
    assert unseen_hook_agents([_dispatched("toolu_1", "Plan", 10)], [_hooked("a1", None, 11)]) == []
