"""Small readers for the fields of Claude Code transcript lines, shared by the transcript facts.

The transcript format is internal to Claude Code and changes between versions, so every reader
here accepts a missing or oddly typed field and answers None or an empty value instead of failing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

INTERNAL_AGENT_PREFIXES = ("acompact-", "aprompt_suggestion-", "aside_question-")
"""Agent ids of Claude Code's own helpers (context compaction, prompt suggestions, side
questions): their `agent-<id>.jsonl` files sit beside real subagents' but no one dispatched them,
and a compaction file repeats the whole conversation."""

INTERRUPT_MARKER = "[Request interrupted by user"
NOTIFICATION_OPEN = "<task-notification>"

_NOTIFICATION = re.compile(r"<task-notification>(.*?)(?:</task-notification>|\Z)", re.S)
_TAG = re.compile(r"<([a-z-]+)>(.*?)</\1>", re.S)
_USAGE = re.compile(r"<usage>(.*?)</usage>", re.S)
_USAGE_PAIR = re.compile(r"([a-z_]+)\s*:\s*(\d+)")
_USAGE_TAG = re.compile(r"<([a-z_]+)>\s*(\d+)\s*</\1>")
_AGENT_ID = re.compile(r"\bagent_?[Ii]d:\s*([A-Za-z0-9_-]+(?:@[A-Za-z0-9_-]+)?)")

STATUS_WORDS = {
    "completed": "completed",
    "complete": "completed",
    "success": "completed",
    "succeeded": "completed",
    "done": "completed",
    "failed": "failed",
    "failure": "failed",
    "error": "failed",
    "killed": "interrupted",
    "stopped": "interrupted",
    "cancelled": "interrupted",
    "canceled": "interrupted",
    "interrupted": "interrupted",
    "aborted": "interrupted",
}


def timestamp(value: Any) -> float | None:
    """Epoch seconds from an ISO-8601 string or an epoch number (seconds or milliseconds)."""
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value).timestamp()
        except ValueError:
            return None
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return value / 1000.0 if value > 1e11 else float(value)
    return None


def is_internal_agent(agent_id: str) -> bool:
    """True for the id of one of Claude Code's own helper agents (see INTERNAL_AGENT_PREFIXES)."""
    return agent_id.startswith(INTERNAL_AGENT_PREFIXES)


def text_of(content: Any) -> str:
    """The text of a message or tool_result content: a string, or a list of text blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, dict):
                text = block.get("text")
                if isinstance(text, str):
                    parts.append(text)
                elif block.get("type") == "tool_result":
                    parts.append(text_of(block.get("content")))
            elif isinstance(block, str):
                parts.append(block)
        return "\n".join(parts)
    return ""


def first_text(content: Any) -> str:
    """The first text of a user message: how a subagent transcript starts (its prompt)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        for block in content:
            if isinstance(block, dict) and isinstance(block.get("text"), str):
                return block["text"]
            if isinstance(block, str):
                return block
    return ""


def byte_size(text: str) -> int:
    """UTF-8 size of text: what it adds to a context, in bytes."""
    return len(text.encode("utf-8", "replace"))


def prompt_key(prompt: Any) -> tuple[int, str] | None:
    """A key that matches a dispatch's prompt to the first message of its subagent transcript."""
    if not isinstance(prompt, str):
        return None
    stripped = prompt.strip()
    if not stripped:
        return None
    return (len(stripped), stripped[:512])


def as_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value)
    return None


def usage_tokens(usage: Any) -> int | None:
    """The context a message used: input (cached or not) plus output tokens."""
    if not isinstance(usage, dict):
        return None
    total = 0
    seen = False
    for key in (
        "input_tokens",
        "cache_creation_input_tokens",
        "cache_read_input_tokens",
        "output_tokens",
    ):
        n = as_int(usage.get(key))
        if n is not None:
            total += n
            seen = True
    return total if seen else None


@dataclass(frozen=True)
class Notification:
    """A `<task-notification>`: a background task (agent or shell) reporting how it ended."""

    task_id: str | None
    tool_use_id: str | None
    status: str | None
    """completed, failed or interrupted; None when the word is not one we know."""
    raw_status: str
    total_tokens: int | None
    tool_uses: int | None


def notifications_in(text: str) -> list[Notification]:
    """Every notification in a queue-operation or user message that starts with one."""
    if not text.lstrip().startswith(NOTIFICATION_OPEN):
        return []
    found = []
    for body in _NOTIFICATION.findall(text):
        tags = {name: value.strip() for name, value in _TAG.findall(body)}
        usage = usage_figures(body)
        raw = tags.get("status", "")
        found.append(
            Notification(
                task_id=tags.get("task-id") or None,
                tool_use_id=tags.get("tool-use-id") or None,
                status=STATUS_WORDS.get(raw.lower()),
                raw_status=raw,
                total_tokens=reported_tokens(usage),
                tool_uses=usage.get("tool_uses"),
            )
        )
    return found


def usage_figures(text: str) -> dict[str, int]:
    """The `<usage>` footer of an agent's report or notification, in either of its forms:
    `total_tokens: N\\ntool_uses: M…` (pairs split by newlines or `;`) or
    `<total_tokens>N</total_tokens><tool_uses>M</tool_uses>…`. The last footer counts: the
    report above it may quote another agent's."""
    bodies = _USAGE.findall(text)
    if not bodies:
        return {}
    body = bodies[-1]
    figures = {key: int(value) for key, value in _USAGE_TAG.findall(body)}
    if not figures:
        figures = {key: int(value) for key, value in _USAGE_PAIR.findall(body)}
    return figures


def reported_tokens(figures: dict[str, int]) -> int | None:
    """The tokens an agent's report says it used: `total_tokens`, or `subagent_tokens` as some
    versions name it (a reported 0 is kept: the agent failed before using any)."""
    for key in ("total_tokens", "subagent_tokens"):
        if key in figures:
            return figures[key]
    return None


def agent_id_in(text: str) -> str | None:
    """The `agentId: X` line a foreground agent's report ends with (`agent_id: name@team`
    for a teammate); the last one, as the report above it may quote other agents' ids."""
    found = _AGENT_ID.findall(text)
    return found[-1] if found else None


def tool_summary(name: str, tool_input: Any) -> str:
    """A short line saying what a tool call does: the command, the file, the description."""
    if not isinstance(tool_input, dict):
        return ""
    for key in ("command", "description", "file_path", "pattern", "path", "url", "query"):
        value = tool_input.get(key)
        if isinstance(value, str) and value:
            line = value.strip().splitlines()[0] if value.strip() else ""
            return line[:200]
    return ""
