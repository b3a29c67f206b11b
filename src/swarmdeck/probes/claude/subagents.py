"""A session's subagents and their statuses, combined from the facts of all its transcripts.

No single file tells a subagent's status. The dispatch is in the parent transcript, the work in
the subagent's own file (or, in the oldest format, inline in the parent's file), and a
background agent's end in a `<task-notification>` of the parent. This module links the three
and decides each status (`resolve_subagents` gives the rules).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from swarmdeck.probes.claude.transcript_facts import (
    MAIN,
    Dispatch,
    NoticeSeen,
    ToolCall,
    TranscriptFacts,
    in_flight_json,
)

RUNNING = "running"
COMPLETED = "completed"
FAILED = "failed"
INTERRUPTED = "interrupted"
DEFAULT_TYPE = "general-purpose"
"""What Claude Code runs when a dispatch names no subagent_type."""
WARMUP = "warmup"
START_SLACK = 1.0
"""Seconds between a process's recorded start and anything it wrote: clocks are rounded."""


@dataclass
class AgentTranscript:
    """A subagent's own transcript file, taken in, with its `.meta.json` when there is one."""

    path: Path
    agent_id: str
    facts: TranscriptFacts
    meta: dict[str, Any] = field(default_factory=dict)
    mtime: float = 0.0

    @property
    def meta_tool_use_id(self) -> str | None:
        value = self.meta.get("toolUseId")
        return value if isinstance(value, str) and value else None

    def meta_text(self, key: str) -> str:
        value = self.meta.get(key)
        return value if isinstance(value, str) else ""


@dataclass
class SubagentInfo:
    """One subagent as the control room shows it."""

    id: str
    tool_use_id: str | None
    description: str
    type: str
    status: str
    background: bool
    started_at: float | None
    ended_at: float | None
    last_activity_at: float | None
    tool_calls: int
    tokens: int | None
    parent_id: str | None
    tool_in_flight: ToolCall | None
    transcript_path: str | None
    prompt_bytes: int = 0
    """Bytes of the dispatch's prompt, written into the parent's context."""
    result_bytes: int = 0
    """Bytes the result and notifications brought back into the parent's context."""

    @property
    def dispatched(self) -> bool:
        """True when the parent's dispatch was seen (not only the subagent's own file)."""
        return self.tool_use_id is not None

    @property
    def agent_known(self) -> bool:
        """False while only its dispatch tells of it: its id is then the dispatch's tool_use_id,
        its agent's own id not linked yet."""
        return self.id != self.tool_use_id

    @property
    def context_bytes(self) -> int:
        return self.prompt_bytes + self.result_bytes

    def to_json(self, now: float | None = None) -> dict[str, Any]:
        """A flat object for the snapshot JSON."""
        return {
            "id": self.id,
            "tool_use_id": self.tool_use_id,
            "description": self.description,
            "type": self.type,
            "status": self.status,
            "background": self.background,
            "started_at": self.started_at,
            "ended_at": self.ended_at,
            "last_activity_at": self.last_activity_at,
            "tool_calls": self.tool_calls,
            "tokens": self.tokens,
            "parent_id": self.parent_id,
            **in_flight_json(self.tool_in_flight),
            "transcript_path": self.transcript_path,
            "context_bytes": self.context_bytes,
        }


@dataclass
class _Facts:
    """What all of a session's transcripts say about background tasks, merged."""

    notices: dict[str, NoticeSeen] = field(default_factory=dict)
    resumed: dict[str, float] = field(default_factory=dict)
    progress_agents: dict[str, str] = field(default_factory=dict)

    def merge(self, facts: TranscriptFacts) -> None:
        for key, notice in facts.notices.items():
            mine = self.notices.get(key)
            if mine is None or (notice.at or 0.0) >= (mine.at or 0.0):
                self.notices[key] = notice
        for key, at in facts.resumed.items():
            self.resumed[key] = max(at, self.resumed.get(key, at))
        self.progress_agents.update(facts.progress_agents)


def resolve_subagents(
    main: TranscriptFacts,
    agents: list[AgentTranscript],
    *,
    session_over: bool,
    process_started_at: float | None = None,
) -> list[SubagentInfo]:
    """Every subagent of one session, nested ones included, with its status decided.

    `process_started_at` is when the session's live process started, when known.

    - foreground: a tool_use with no tool_result yet is running; an `is_error` result is
      failed, or interrupted when it says the user interrupted it; any other result is completed;
    - background (`async_launched`, `isAsync`, forked, teammate): the immediate result is only
      the launch; the status comes from the latest notification, unless the agent was resumed
      after it;
    - a session known to be over leaves nothing running: what was still running was
      interrupted (or completed, when its own transcript ended on a final answer). So does a
      subagent started (or last resumed) before the session's live process started: subagents
      run inside the process that started them, and `claude --resume` brings back the
      transcript, not them.
    """
    merged = _Facts()
    merged.merge(main)
    for agent in agents:
        merged.merge(agent.facts)
    by_id = {agent.agent_id: agent for agent in agents}
    by_tool_use = {a.meta_tool_use_id: a for a in agents if a.meta_tool_use_id}
    by_prompt: dict[tuple[int, str], list[str]] = {}
    for agent in sorted(agents, key=lambda a: a.facts.first_at or a.mtime):
        key = agent.facts.main.prompt_key
        if key is not None:
            by_prompt.setdefault(key, []).append(agent.agent_id)
    sidechains: dict[tuple[int, str], list[str]] = {}
    for root, thread in main.threads.items():
        if root != MAIN and thread.prompt_key is not None:
            sidechains.setdefault(thread.prompt_key, []).append(root)

    sources: list[tuple[Dispatch, TranscriptFacts, str | None]] = [
        (d, main, None) for d in main.dispatches.values()
    ]
    for agent in agents:
        sources.extend((d, agent.facts, agent.agent_id) for d in agent.facts.dispatches.values())
    sources.sort(key=lambda item: item[0].started_at or 0.0)

    explicit = {
        d.tool_use_id: (
            d.agent_id
            or merged.progress_agents.get(d.tool_use_id)
            or _agent_id_of(by_tool_use.get(d.tool_use_id))
        )
        for d, _, _ in sources
    }
    claimed: set[str] = {agent_id for agent_id in explicit.values() if agent_id}
    found: list[SubagentInfo] = []
    sidechain_owner: dict[str, str] = {}
    pending_parent: list[tuple[SubagentInfo, str]] = []
    for dispatch, facts, owner in sources:
        agent_id = explicit[dispatch.tool_use_id]
        if agent_id is None and dispatch.prompt_key is not None:
            agent_id = _take(by_prompt.get(dispatch.prompt_key), claimed)
        root = None
        if agent_id is None and facts is main and dispatch.prompt_key is not None:
            root = _take(sidechains.get(dispatch.prompt_key), claimed)
        transcript = by_id.get(agent_id) if agent_id else None
        if transcript is not None:
            thread = transcript.facts.main
        elif root is not None:
            thread = main.threads[root]
        else:
            thread = facts.progress_threads.get(dispatch.tool_use_id)
        info = _from_dispatch(
            dispatch, agent_id, transcript, thread, merged, session_over, process_started_at
        )
        if root is not None:
            sidechain_owner[root] = info.id
        if owner is not None:
            info.parent_id = owner
        elif dispatch.thread != MAIN:
            pending_parent.append((info, dispatch.thread))
        found.append(info)
    for info, thread_root in pending_parent:
        info.parent_id = sidechain_owner.get(thread_root)

    for agent in agents:
        if agent.agent_id in claimed or _is_warmup(agent) or agent.facts.last_at is None:
            # A file with no dated record (empty, or zeros) tells of no subagent.
            continue
        found.append(_from_own_file(agent, merged, session_over, process_started_at))
    return found


def _take(candidates: list[str] | None, claimed: set[str]) -> str | None:
    """The first candidate not yet linked to a dispatch (identical prompts match in order)."""
    if not candidates:
        return None
    for candidate in candidates:
        if candidate not in claimed:
            claimed.add(candidate)
            return candidate
    return None


def _agent_id_of(agent: AgentTranscript | None) -> str | None:
    return agent.agent_id if agent else None


def _is_warmup(agent: AgentTranscript) -> bool:
    """Claude Code once started a throwaway "Warmup" sidechain per session; it is no subagent."""
    return agent.facts.main.prompt_head.strip().lower() == WARMUP


def predates_process(at: float | None, process_started_at: float | None) -> bool:
    """True when something that happened at `at` came before the live process started."""
    return at is not None and process_started_at is not None and (
        at < process_started_at - START_SLACK
    )


def _from_dispatch(
    dispatch: Dispatch,
    agent_id: str | None,
    transcript: AgentTranscript | None,
    thread: Any,
    merged: _Facts,
    session_over: bool,
    process_started_at: float | None,
) -> SubagentInfo:
    notice = None
    for ident in (agent_id, dispatch.tool_use_id):
        if ident and ident in merged.notices:
            notice = merged.notices[ident]
            break
    resumed_at = merged.resumed.get(agent_id) if agent_id else None
    own_done = bool(thread is not None and thread.turn_done and not thread.open_calls)
    over = session_over or predates_process(
        _latest([dispatch.started_at, resumed_at]), process_started_at
    )
    status, ended_at = _status(dispatch, notice, resumed_at, own_done, over)
    if status == INTERRUPTED and ended_at is None and thread is not None:
        ended_at = thread.last_at
    tool_calls = thread.tool_calls if thread is not None else 0
    for reported in (dispatch.tool_uses, notice.tool_uses if notice else None):
        if reported is not None:
            tool_calls = max(tool_calls, reported)
    tokens = dispatch.total_tokens
    if tokens is None and notice is not None:
        tokens = notice.total_tokens
    if tokens is None and thread is not None:
        tokens = thread.context_tokens
    last = [
        dispatch.started_at,
        dispatch.last_progress_at,
        dispatch.result_at,
        notice.at if notice else None,
        thread.last_at if thread is not None else None,
    ]
    meta_description = transcript.meta_text("description") if transcript else ""
    meta_type = transcript.meta_text("agentType") if transcript else ""
    description = dispatch.description or meta_description
    agent_type = dispatch.subagent_type or meta_type
    return SubagentInfo(
        id=agent_id or dispatch.tool_use_id,
        tool_use_id=dispatch.tool_use_id,
        description=description,
        type=agent_type or DEFAULT_TYPE,
        status=status,
        background=dispatch.background,
        started_at=dispatch.started_at,
        ended_at=ended_at,
        last_activity_at=_latest(last),
        tool_calls=tool_calls,
        tokens=tokens,
        parent_id=None,
        tool_in_flight=thread.in_flight() if status == RUNNING and thread is not None else None,
        transcript_path=str(transcript.path) if transcript else None,
        prompt_bytes=dispatch.prompt_bytes,
        result_bytes=dispatch.result_bytes + (notice.bytes if notice else 0),
    )


def _status(
    dispatch: Dispatch,
    notice: NoticeSeen | None,
    resumed_at: float | None,
    own_done: bool,
    session_over: bool,
) -> tuple[str, float | None]:
    """The status of a dispatched subagent and when it ended (None while running)."""
    if dispatch.interrupted:
        return INTERRUPTED, dispatch.result_at
    ended_by_notice = (
        notice is not None
        and notice.status is not None
        and not (resumed_at is not None and notice.at is not None and resumed_at > notice.at)
    )
    if dispatch.result_at is None:
        if ended_by_notice and notice is not None and notice.status is not None:
            return notice.status, notice.at
        return _still_running(own_done, session_over)
    if dispatch.is_error:
        return FAILED, dispatch.result_at
    if dispatch.background:
        if ended_by_notice and notice is not None and notice.status is not None:
            return notice.status, notice.at
        return _still_running(own_done, session_over)
    if resumed_at is not None and resumed_at > dispatch.result_at:
        if ended_by_notice and notice is not None and notice.status is not None:
            return notice.status, notice.at
        return _still_running(own_done, session_over)
    return COMPLETED, dispatch.result_at


def _still_running(own_done: bool, session_over: bool) -> tuple[str, float | None]:
    if not session_over:
        return RUNNING, None
    return (COMPLETED if own_done else INTERRUPTED), None


def _from_own_file(
    agent: AgentTranscript, merged: _Facts, session_over: bool, process_started_at: float | None
) -> SubagentInfo:
    """A subagent known only from its own transcript (its dispatch is not in any file read)."""
    thread = agent.facts.main
    notice = merged.notices.get(agent.agent_id)
    resumed_at = merged.resumed.get(agent.agent_id)
    over = session_over or predates_process(
        _latest([thread.first_at, resumed_at]), process_started_at
    )
    ended_at = None
    if notice is not None and notice.status is not None and not (
        resumed_at is not None and notice.at is not None and resumed_at > notice.at
    ):
        status, ended_at = notice.status, notice.at
    elif thread.interrupted:
        status, ended_at = INTERRUPTED, thread.last_at
    elif thread.turn_done and not thread.open_calls:
        status, ended_at = COMPLETED, thread.last_at
    else:
        status, ended_at = _still_running(False, over)
        if status == INTERRUPTED:
            ended_at = thread.last_at
    tokens = notice.total_tokens if notice and notice.total_tokens is not None else None
    return SubagentInfo(
        id=agent.agent_id,
        tool_use_id=agent.meta_tool_use_id,
        description=agent.meta_text("description") or _first_line(thread.prompt_head),
        type=agent.meta_text("agentType") or DEFAULT_TYPE,
        status=status,
        background=False,
        started_at=thread.first_at,
        ended_at=ended_at,
        last_activity_at=_latest([thread.last_at, notice.at if notice else None]),
        tool_calls=thread.tool_calls,
        tokens=tokens if tokens is not None else thread.context_tokens,
        parent_id=None,
        tool_in_flight=thread.in_flight() if status == RUNNING else None,
        transcript_path=str(agent.path),
    )


def _first_line(text: str) -> str:
    stripped = text.strip()
    return stripped.splitlines()[0][:80] if stripped else ""


def _latest(times: list[float | None]) -> float | None:
    present = [t for t in times if t is not None]
    return max(present) if present else None

