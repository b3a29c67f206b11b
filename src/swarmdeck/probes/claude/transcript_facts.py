"""Takes in the records of one Claude Code transcript, in order, as what the control room shows.

It keeps only small facts (open tool calls, dispatches, notifications, timestamps), never the
records themselves, so a session of hundreds of megabytes costs little memory and each appended
line is taken in in constant time. Statuses are not decided here: a subagent's status needs facts
from several files (its dispatch, its own transcript, notifications), so `sessions.py` combines
the facts when asked.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from swarmdeck.hook_events import DISPATCH_TOOLS
from swarmdeck.probes.claude.transcript_fields import (
    INTERRUPT_MARKER,
    Notification,
    agent_id_in,
    as_int,
    byte_size,
    first_text,
    notifications_in,
    prompt_key,
    reported_tokens,
    text_of,
    timestamp,
    tool_summary,
    usage_figures,
    usage_tokens,
)
from swarmdeck.probes.claude.usage import UsageCounter, turn_input

MAIN = "main"
BACKGROUND_RESULT_STATUSES = frozenset(
    {"async_launched", "teammate_spawned", "remote_launched", "forked"}
)
"""toolUseResult statuses that say the agent was launched, not that it finished."""
NO_BRANCH = "HEAD"
"""The `gitBranch` Claude Code writes for a folder outside any git repository."""


@dataclass
class ToolCall:
    """A tool call that has started and has no result yet."""

    tool_use_id: str
    name: str
    summary: str
    started_at: float | None


def in_flight_json(call: ToolCall | None) -> dict[str, Any]:
    """The snapshot JSON's three `tool_in_flight*` keys for a call (all None when idle)."""
    return {
        "tool_in_flight": call.name if call else None,
        "tool_in_flight_summary": call.summary if call else None,
        "tool_in_flight_since": call.started_at if call else None,
    }


@dataclass
class Dispatch:
    """One Agent/Task call, with everything its parent transcript says about it."""

    tool_use_id: str
    thread: str
    """MAIN, or the root uuid of an inline sidechain (the oldest format)."""
    description: str
    subagent_type: str
    prompt_key: tuple[int, str] | None
    prompt_bytes: int
    started_at: float | None
    run_in_background: bool
    result_at: float | None = None
    result_status: str | None = None
    """toolUseResult.status: completed, async_launched, teammate_spawned, forked…"""
    is_error: bool = False
    interrupted: bool = False
    background: bool = False
    agent_id: str | None = None
    result_bytes: int = 0
    total_tokens: int | None = None
    tool_uses: int | None = None
    last_progress_at: float | None = None


@dataclass
class NoticeSeen:
    """The latest notification for one task, counted once however often it was written."""

    status: str | None
    at: float | None
    total_tokens: int | None
    tool_uses: int | None
    bytes: int


@dataclass
class Thread:
    """One conversation thread: the file's own, or an inline sidechain of the oldest format."""

    first_at: float | None = None
    last_at: float | None = None
    prompt_key: tuple[int, str] | None = None
    prompt_head: str = ""
    open_calls: dict[str, ToolCall] = field(default_factory=dict)
    tool_calls: int = 0
    context_tokens: int | None = None
    turn_done: bool = False
    """The last thing said was the assistant's, with no tool call after it."""
    interrupted: bool = False

    def touch(self, at: float | None) -> None:
        if at is None:
            return
        if self.first_at is None or at < self.first_at:
            self.first_at = at
        if self.last_at is None or at > self.last_at:
            self.last_at = at

    def in_flight(self) -> ToolCall | None:
        """The most recent call still waiting for its result."""
        latest = None
        for call in self.open_calls.values():
            if latest is None or (call.started_at or 0.0) >= (latest.started_at or 0.0):
                latest = call
        return latest


class TranscriptFacts:
    """Everything the control room needs from one transcript file, taken in line by line."""

    def __init__(self, *, agent_file: bool = False) -> None:
        self.agent_file = agent_file
        self.session_id: str | None = None
        self.agent_id: str | None = None
        self.cwd: str | None = None
        self.git_branch: str | None = None
        self.version: str | None = None
        self._titles: dict[str, str] = {}
        self.usage = UsageCounter()
        """The file's tokens by model, each message once (usage.py)."""
        self.model: str | None = None
        """The main thread's latest model."""
        self.context_input: int | None = None
        """The main thread's latest turn's whole input (fresh, cache read, cache written)."""
        self.last_answer_at: float | None = None
        """When the main thread last answered."""
        self.threads: dict[str, Thread] = {MAIN: Thread()}
        self.dispatches: dict[str, Dispatch] = {}
        self.notices: dict[str, NoticeSeen] = {}
        self.resumed: dict[str, float] = {}
        self.progress_agents: dict[str, str] = {}
        self.progress_threads: dict[str, Thread] = {}
        """Per dispatch, the subagent's turns as early-2026 `agent_progress` lines relay them."""
        self._progress_calls: set[str] = set()
        self._seen_calls: set[str] = set()
        self._seen_notices: dict[tuple[str | None, str | None, str], float] = {}
        self._sidechain_root: dict[str, str] = {}
        self._send_targets: dict[str, str] = {}

    @property
    def main(self) -> Thread:
        return self.threads[MAIN]

    def forget(self, idents: set[str]) -> None:
        """Let go of what this file said of ended dispatches (a session's retired subagents,
        sessions.py): each dispatch, its call id, and every notice, resume and progress of it,
        by its tool use id or agent id in `idents`. Only long-ended dispatches are retired:
        Claude Code writes no line of one again."""
        for ident in idents:
            self.dispatches.pop(ident, None)
            self._seen_calls.discard(ident)
            self.notices.pop(ident, None)
            self.resumed.pop(ident, None)
            self.progress_agents.pop(ident, None)
            self.progress_threads.pop(ident, None)
            self._progress_calls.discard(ident)
        for key in [key for key in self._seen_notices if key[0] in idents or key[1] in idents]:
            del self._seen_notices[key]

    @property
    def first_at(self) -> float | None:
        return self.main.first_at

    @property
    def last_at(self) -> float | None:
        times = [t.last_at for t in self.threads.values() if t.last_at is not None]
        return max(times) if times else None

    def feed(self, records: list[dict[str, Any]]) -> None:
        for record in records:
            self.feed_one(record)

    def feed_one(self, record: dict[str, Any]) -> None:
        """Take in one record; a record of a shape not known is counted and otherwise ignored."""
        kind = record.get("type")
        at = timestamp(record.get("timestamp"))
        self._envelope(record)
        if kind == "assistant":
            thread = self._thread_for(record)
            thread.touch(at)
            self._assistant(record, thread, at)
        elif kind == "user":
            thread = self._thread_for(record)
            thread.touch(at)
            self._user(record, thread, at)
        elif kind == "queue-operation":
            self._queue_operation(record, at)
        elif kind == "progress":
            self._progress(record, at)
        elif kind in ("summary", "ai-title", "custom-title"):
            self._title(record)
        elif kind == "system":
            self._thread_for(record).touch(at)

    def _envelope(self, record: dict[str, Any]) -> None:
        sid = record.get("sessionId")
        if isinstance(sid, str) and sid and self.session_id is None:
            self.session_id = sid
        agent = record.get("agentId")
        if self.agent_file and isinstance(agent, str) and agent and self.agent_id is None:
            self.agent_id = agent
        cwd = record.get("cwd")
        if isinstance(cwd, str) and cwd:
            self.cwd = cwd
        branch = record.get("gitBranch")
        if isinstance(branch, str) and branch:
            # "HEAD": a folder outside any repository (or a detached head), on no branch.
            self.git_branch = branch if branch != NO_BRANCH else None
        version = record.get("version")
        if isinstance(version, str) and version:
            self.version = version

    def _title(self, record: dict[str, Any]) -> None:
        for key in ("customTitle", "aiTitle", "summary"):
            value = record.get(key)
            if isinstance(value, str) and value.strip():
                self._titles[key] = value.strip()[:200]

    @property
    def title(self) -> str | None:
        """The session's name: a title the user set, else Claude's, else a summary line."""
        for key in ("customTitle", "aiTitle", "summary"):
            if key in self._titles:
                return self._titles[key]
        return None

    def _thread_for(self, record: dict[str, Any]) -> Thread:
        """The main thread, or, in a main file of the oldest format, the inline sidechain."""
        if self.agent_file or record.get("isSidechain") is not True:
            return self.main
        uuid = record.get("uuid")
        parent = record.get("parentUuid")
        root = self._sidechain_root.get(parent) if isinstance(parent, str) else None
        if root is None:
            root = uuid if isinstance(uuid, str) else f"sidechain-{len(self.threads)}"
        if isinstance(uuid, str):
            self._sidechain_root[uuid] = root
        thread = self.threads.get(root)
        if thread is None:
            thread = self.threads[root] = Thread()
        return thread

    def _thread_key(self, thread: Thread) -> str:
        for key, value in self.threads.items():
            if value is thread:
                return key
        return MAIN

    def _assistant(self, record: dict[str, Any], thread: Thread, at: float | None) -> None:
        message = record.get("message")
        if not isinstance(message, dict):
            return
        tokens = usage_tokens(message.get("usage"))
        if tokens is not None:
            thread.context_tokens = tokens
        self.usage.add(message)
        if thread is self.main:
            self._main_answer(message, at)
        content = message.get("content")
        if not isinstance(content, list):
            if isinstance(content, str) and content.strip():
                thread.turn_done = not thread.open_calls
            return
        for block in content:
            if not isinstance(block, dict):
                continue
            btype = block.get("type")
            if btype == "tool_use":
                self._tool_use(block, thread, at)
            elif btype == "text" and isinstance(block.get("text"), str) and block["text"].strip():
                thread.turn_done = not thread.open_calls

    def _main_answer(self, message: dict[str, Any], at: float | None) -> None:
        model = message.get("model")
        if isinstance(model, str) and model and not model.startswith("<"):
            self.model = model  # not Claude Code's own `<synthetic>` error lines
            context = turn_input(message.get("usage"))
            if context is not None:
                self.context_input = context
        if at is not None and (self.last_answer_at is None or at > self.last_answer_at):
            self.last_answer_at = at

    def _tool_use(self, block: dict[str, Any], thread: Thread, at: float | None) -> None:
        call_id = block.get("id")
        name = block.get("name")
        if not isinstance(call_id, str) or not isinstance(name, str):
            return
        thread.turn_done = False
        if call_id in self._seen_calls:
            return
        self._seen_calls.add(call_id)
        thread.tool_calls += 1
        tool_input = block.get("input")
        thread.open_calls[call_id] = ToolCall(call_id, name, tool_summary(name, tool_input), at)
        if name == "SendMessage" and isinstance(tool_input, dict):
            target = tool_input.get("to")
            if isinstance(target, str) and target:
                self._send_targets[call_id] = target
        if name not in DISPATCH_TOOLS:
            return
        tool_input = tool_input if isinstance(tool_input, dict) else {}
        description = tool_input.get("description")
        subagent_type = tool_input.get("subagent_type")
        prompt = tool_input.get("prompt")
        self.dispatches[call_id] = Dispatch(
            tool_use_id=call_id,
            thread=self._thread_key(thread),
            description=description.strip() if isinstance(description, str) else "",
            subagent_type=subagent_type if isinstance(subagent_type, str) else "",
            prompt_key=prompt_key(prompt),
            prompt_bytes=byte_size(prompt) if isinstance(prompt, str) else 0,
            started_at=at,
            run_in_background=tool_input.get("run_in_background") is True,
        )

    def _user(self, record: dict[str, Any], thread: Thread, at: float | None) -> None:
        message = record.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if thread.prompt_key is None and record.get("isMeta") is not True:
            head = first_text(content)
            key = prompt_key(head)
            if key is not None and not _is_tool_result_list(content):
                thread.prompt_key = key
                thread.prompt_head = head.strip()[:200]
        if isinstance(content, str):
            self._user_text(content, thread, at)
            return
        if not isinstance(content, list):
            return
        results = [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]
        single = len(results) == 1
        extra = record.get("toolUseResult") if single else None
        named = self._result_agent(record) if single else None
        for block in content:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_result":
                self._tool_result(block, extra, named, thread, at)
            elif block.get("type") == "text" and isinstance(block.get("text"), str):
                self._user_text(block["text"], thread, at)

    def _result_agent(self, record: dict[str, Any]) -> str | None:
        """The `agentId` a 2.0.x main file wrote beside the message of a Task result line.

        In an agent's own file (and on inline sidechain lines) every line carries the id of the
        agent whose file it is, so there it names the caller, never the agent called.
        """
        if self.agent_file or record.get("isSidechain") is True:
            return None
        agent = record.get("agentId")
        return agent if isinstance(agent, str) and agent else None

    def _user_text(self, text: str, thread: Thread, at: float | None) -> None:
        if text.startswith(INTERRUPT_MARKER):
            thread.interrupted = True
            for call_id in list(thread.open_calls):
                dispatch = self.dispatches.get(call_id)
                if dispatch is not None and dispatch.result_at is None:
                    dispatch.interrupted = True
                    dispatch.result_at = at
                del thread.open_calls[call_id]
            thread.turn_done = True
            return
        thread.turn_done = False
        self._notifications(text, at)

    def _tool_result(
        self,
        block: dict[str, Any],
        extra: Any,
        named_agent: str | None,
        thread: Thread,
        at: float | None,
    ) -> None:
        call_id = block.get("tool_use_id")
        if not isinstance(call_id, str):
            return
        thread.turn_done = False
        for candidate in self.threads.values():
            candidate.open_calls.pop(call_id, None)
        is_error = block.get("is_error") is True
        text = text_of(block.get("content"))
        if isinstance(extra, dict):
            resumed = extra.get("resumedAgentId")
            if isinstance(resumed, str) and resumed and at is not None:
                self.resumed[resumed] = at
            target = self._send_targets.pop(call_id, None)
            if target and extra.get("success") is True and not is_error and at is not None:
                self.resumed.setdefault(target, at)
                self.resumed[target] = max(self.resumed[target], at)
        dispatch = self.dispatches.get(call_id)
        if dispatch is None:
            return
        dispatch.result_at = at
        dispatch.is_error = is_error
        dispatch.result_bytes = byte_size(text)
        lowered = text.lower()
        dispatch.interrupted = is_error and (
            "interrupt" in lowered or "cancel" in lowered or "rejected" in lowered
        )
        figures = usage_figures(text)
        tokens = reported_tokens(figures)
        if tokens is not None:
            dispatch.total_tokens = tokens
        dispatch.tool_uses = figures.get("tool_uses", dispatch.tool_uses)
        dispatch.agent_id = dispatch.agent_id or agent_id_in(text) or named_agent
        if isinstance(extra, dict):
            self._dispatch_result(dispatch, extra)
        if not is_error and dispatch.result_status is None and "async agent launched" in lowered:
            dispatch.background = True

    def _dispatch_result(self, dispatch: Dispatch, extra: dict[str, Any]) -> None:
        status = extra.get("status")
        if isinstance(status, str):
            dispatch.result_status = status
        agent = extra.get("agentId") or extra.get("agent_id")
        if isinstance(agent, str) and agent:
            dispatch.agent_id = agent
        if (
            extra.get("isAsync") is True
            or extra.get("background") is True
            or status in BACKGROUND_RESULT_STATUSES
        ):
            dispatch.background = True
        tokens = as_int(extra.get("totalTokens"))
        if tokens is not None:
            dispatch.total_tokens = tokens
        uses = as_int(extra.get("totalToolUseCount"))
        if uses is not None:
            dispatch.tool_uses = uses

    def _queue_operation(self, record: dict[str, Any], at: float | None) -> None:
        content = record.get("content")
        text = content if isinstance(content, str) else text_of(content)
        if text:
            self._notifications(text, at)

    def _notifications(self, text: str, at: float | None) -> None:
        found = notifications_in(text)
        if not found:
            return
        size = byte_size(text) // len(found)
        for notice in found:
            self._notice(notice, at, size)

    def _notice(self, notice: Notification, at: float | None, size: int) -> None:
        """Keep the latest notice per task; a copy of one already seen is counted once.

        Claude Code writes each notification more than once (enqueue, dequeue, the user turn
        that delivers it). A resumed agent notifies again with the same words, so a copy is only
        a copy when the task was not resumed since the first one was seen.
        """
        key = (notice.task_id, notice.tool_use_id, notice.raw_status)
        first = self._seen_notices.get(key)
        if first is not None and not (
            notice.task_id and self.resumed.get(notice.task_id, float("-inf")) > first
        ):
            return
        self._seen_notices[key] = at if at is not None else float("-inf")
        ids = [ident for ident in (notice.task_id, notice.tool_use_id) if ident]
        earlier = sum(self.notices[i].bytes for i in ids[:1] if i in self.notices)
        seen = NoticeSeen(notice.status, at, notice.total_tokens, notice.tool_uses, size + earlier)
        for ident in ids:
            self.notices[ident] = seen

    def _progress(self, record: dict[str, Any], at: float | None) -> None:
        data = record.get("data")
        parent = record.get("parentToolUseID")
        if not isinstance(data, dict) or not isinstance(parent, str):
            return
        if data.get("type") != "agent_progress":
            return
        agent = data.get("agentId")
        if isinstance(agent, str) and agent:
            self.progress_agents[parent] = agent
        dispatch = self.dispatches.get(parent)
        if dispatch is not None and at is not None:
            dispatch.last_progress_at = max(dispatch.last_progress_at or at, at)
        thread = self.progress_threads.get(parent)
        if thread is None:
            thread = self.progress_threads[parent] = Thread()
        thread.touch(at)
        inner = data.get("message")
        if isinstance(inner, dict):
            self._relayed(inner, thread, at)

    def _relayed(self, inner: dict[str, Any], thread: Thread, at: float | None) -> None:
        """One of the subagent's own messages, as a progress line carries it."""
        message = inner.get("message") if isinstance(inner.get("message"), dict) else inner
        thread.touch(timestamp(inner.get("timestamp")) or at)
        role = message.get("role") or inner.get("type")
        content = message.get("content")
        if not isinstance(content, list):
            return
        if role == "assistant":
            tokens = usage_tokens(message.get("usage"))
            if tokens is not None:
                thread.context_tokens = tokens
            for block in content:
                if not isinstance(block, dict):
                    continue
                call_id, name = block.get("id"), block.get("name")
                if block.get("type") == "tool_use" and isinstance(call_id, str):
                    if call_id not in self._progress_calls:
                        self._progress_calls.add(call_id)
                        thread.tool_calls += 1
                        tool_name = name if isinstance(name, str) else "?"
                        summary = tool_summary(tool_name, block.get("input"))
                        thread.open_calls[call_id] = ToolCall(call_id, tool_name, summary, at)
                    thread.turn_done = False
                elif block.get("type") == "text" and str(block.get("text") or "").strip():
                    thread.turn_done = not thread.open_calls
        elif role == "user":
            for block in content:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    call_id = block.get("tool_use_id")
                    if isinstance(call_id, str):
                        thread.open_calls.pop(call_id, None)


def _is_tool_result_list(content: Any) -> bool:
    return isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in content
    )
