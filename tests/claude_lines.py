"""Real-shaped Claude Code transcript lines and folder trees for tests.

The envelopes follow transcripts of Claude Code 1.x to 2.1.2xx (see
shared/reference/claude-code.md): one content block per assistant line sharing `message.id`,
`toolUseResult` beside `message` on tool results, `<task-notification>` in queue operations.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

BASE = datetime(2026, 8, 27, 2, 0, 0, tzinfo=UTC).timestamp()


def iso(offset: float) -> str:
    """ISO-8601 'Z' time `offset` seconds after BASE, as Claude Code writes it."""
    moment = datetime.fromtimestamp(BASE + offset, tz=UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


@dataclass
class Lines:
    """Builds the lines of one transcript with a consistent envelope."""

    session_id: str
    cwd: str = "/work/proj"
    branch: str = "main"
    version: str = "2.1.173"
    sidechain: bool = False
    agent_id: str | None = None
    lines: list[dict[str, Any]] = field(default_factory=list)
    _n: int = 0

    def _envelope(self, kind: str, at: float, **extra: Any) -> dict[str, Any]:
        self._n += 1
        uuid = extra.pop("uuid", None) or f"{self.session_id[:4]}-{self.agent_id or 'm'}-{self._n}"
        parent = extra.pop("parent", "auto")
        if parent == "auto":
            parent = self.lines[-1].get("uuid") if self.lines else None
        line: dict[str, Any] = {
            "parentUuid": parent,
            "isSidechain": extra.pop("sidechain", self.sidechain),
            "userType": "external",
            "cwd": self.cwd,
            "sessionId": self.session_id,
            "version": self.version,
            "gitBranch": self.branch,
            "type": kind,
            "timestamp": iso(at),
            "uuid": uuid,
        }
        if self.agent_id is not None:
            line["agentId"] = self.agent_id
        line.update(extra)
        self.lines.append(line)
        return line

    def prompt(self, text: str, at: float, **extra: Any) -> dict[str, Any]:
        return self._envelope("user", at, message={"role": "user", "content": text}, **extra)

    def user_blocks(self, blocks: list[dict[str, Any]], at: float, **extra: Any) -> dict[str, Any]:
        return self._envelope("user", at, message={"role": "user", "content": blocks}, **extra)

    def tool_use(
        self,
        tool_id: str,
        name: str,
        tool_input: dict[str, Any],
        at: float,
        *,
        message_id: str | None = None,
        usage: dict[str, int] | None = None,
        **extra: Any,
    ) -> dict[str, Any]:
        message = {
            "id": message_id or f"msg_{tool_id}",
            "type": "message",
            "role": "assistant",
            "model": "claude-opus-4-6",
            "content": [{"type": "tool_use", "id": tool_id, "name": name, "input": tool_input}],
            "stop_reason": None,
            "usage": usage or {"input_tokens": 10, "output_tokens": 5},
        }
        return self._envelope(
            "assistant", at, message=message, requestId=f"req_{message['id']}", **extra
        )

    def agent(
        self,
        tool_id: str,
        description: str,
        prompt: str,
        at: float,
        *,
        subagent_type: str = "general-purpose",
        name: str = "Agent",
        background: bool | None = None,
        message_id: str | None = None,
        **extra: Any,
    ) -> dict[str, Any]:
        tool_input: dict[str, Any] = {
            "description": description,
            "prompt": prompt,
            "subagent_type": subagent_type,
        }
        if background is not None:
            tool_input["run_in_background"] = background
        return self.tool_use(tool_id, name, tool_input, at, message_id=message_id, **extra)

    def text(
        self, text: str, at: float, *, usage: dict[str, int] | None = None, **extra: Any
    ) -> dict[str, Any]:
        message = {
            "id": extra.pop("message_id", f"msg_text_{self._n}"),
            "type": "message",
            "role": "assistant",
            "model": "claude-opus-4-6",
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "usage": usage or {"input_tokens": 100, "output_tokens": 20},
        }
        return self._envelope("assistant", at, message=message, **extra)

    def result(
        self,
        tool_id: str,
        content: Any,
        at: float,
        *,
        is_error: bool = False,
        tool_use_result: Any = None,
        **extra: Any,
    ) -> dict[str, Any]:
        block: dict[str, Any] = {"tool_use_id": tool_id, "type": "tool_result", "content": content}
        if is_error:
            block["is_error"] = True
        fields: dict[str, Any] = {"message": {"role": "user", "content": [block]}}
        if tool_use_result is not None:
            fields["toolUseResult"] = tool_use_result
        fields.update(extra)
        return self._envelope("user", at, **fields)

    def foreground_done(self, tool_id: str, agent_id: str, at: float, *, tokens: int = 4000,
                        tool_uses: int = 3, report: str = "All done.") -> dict[str, Any]:
        """The result of a foreground agent, as 2.1.x writes it (text footer + toolUseResult)."""
        footer = (
            f"agentId: {agent_id} (use SendMessage with to: '{agent_id}' to continue this agent)\n"
            f"<usage>total_tokens: {tokens}\ntool_uses: {tool_uses}\nduration_ms: 61000</usage>"
        )
        return self.result(
            tool_id,
            [{"type": "text", "text": report}, {"type": "text", "text": footer}],
            at,
            tool_use_result={
                "status": "completed",
                "agentId": agent_id,
                "prompt": "…",
                "totalDurationMs": 61000,
                "totalTokens": tokens,
                "totalToolUseCount": tool_uses,
                "usage": {"input_tokens": 1, "output_tokens": 2},
            },
        )

    def async_launched(self, tool_id: str, agent_id: str, at: float) -> dict[str, Any]:
        """The immediate result of a background agent: a launch, not a completion."""
        return self.result(
            tool_id,
            [
                {
                    "type": "text",
                    "text": "Async agent launched successfully.\n"
                    f"agentId: {agent_id} (This is an internal ID for your use, do not mention it)"
                    "\nThe agent is working in the background.",
                }
            ],
            at,
            tool_use_result={
                "isAsync": True,
                "status": "async_launched",
                "agentId": agent_id,
                "description": "bg",
                "prompt": "…",
                "outputFile": f"/tmp/claude-0/tasks/{agent_id}.output",
                "resolvedModel": "claude-opus-4-6",
            },
        )

    def notification(
        self,
        task_id: str,
        tool_use_id: str | None,
        status: str,
        at: float,
        *,
        operation: str = "enqueue",
        summary: str = "Agent finished",
    ) -> dict[str, Any]:
        """A `<task-notification>` as a queue operation (written again on dequeue)."""
        line = {
            "type": "queue-operation",
            "operation": operation,
            "timestamp": iso(at),
            "sessionId": self.session_id,
            "content": notification_text(task_id, tool_use_id, status, summary),
        }
        self.lines.append(line)
        return line

    def notification_turn(
        self, task_id: str, tool_use_id: str | None, status: str, at: float
    ) -> dict[str, Any]:
        """The user turn that delivers a notification to the model (a string content)."""
        return self._envelope(
            "user",
            at,
            message={
                "role": "user",
                "content": notification_text(task_id, tool_use_id, status, "Agent finished"),
            },
        )

    def progress(self, parent_tool_id: str, agent_id: str, at: float) -> dict[str, Any]:
        """An early-2026 agent_progress line linking a dispatch to its agent."""
        line = {
            "type": "progress",
            "toolUseID": f"agent_msg_{agent_id}_{self._n}",
            "parentToolUseID": parent_tool_id,
            "timestamp": iso(at),
            "sessionId": self.session_id,
            "uuid": f"progress-{self._n}",
            "data": {"type": "agent_progress", "agentId": agent_id, "prompt": "…"},
        }
        self._n += 1
        self.lines.append(line)
        return line

    def raw(self, line: dict[str, Any]) -> dict[str, Any]:
        self.lines.append(line)
        return line

    def dumps(self) -> str:
        return "".join(json.dumps(line) + "\n" for line in self.lines)


def notification_text(task_id: str, tool_use_id: str | None, status: str, summary: str) -> str:
    parts = ["<task-notification>", f"<task-id>{task_id}</task-id>"]
    if tool_use_id:
        parts.append(f"<tool-use-id>{tool_use_id}</tool-use-id>")
    parts += [
        f"<output-file>/tmp/claude-0/tasks/{task_id}.output</output-file>",
        f"<status>{status}</status>",
        f"<summary>{summary}</summary>",
        "<usage>total_tokens: 5200\ntool_uses: 7\nduration_ms: 90000</usage>",
        "</task-notification>",
    ]
    return "\n".join(parts)


class ClaudeTree:
    """A `$CLAUDE_CONFIG_DIR` folder with projects, sessions and subagents, built on disk."""

    def __init__(self, root: Path, project: str = "-work-proj") -> None:
        self.root = root
        self.project_dir = root / "projects" / project
        self.project_dir.mkdir(parents=True, exist_ok=True)

    def main_path(self, session_id: str) -> Path:
        return self.project_dir / f"{session_id}.jsonl"

    def write_main(self, lines: Lines) -> Path:
        path = self.main_path(lines.session_id)
        path.write_text(lines.dumps())
        return path

    def agent_path(self, session_id: str, agent_id: str, *, nested_in: str | None = None) -> Path:
        folder = self.project_dir / session_id / "subagents"
        if nested_in:
            folder = folder / nested_in
        return folder / f"agent-{agent_id}.jsonl"

    def write_agent(
        self,
        lines: Lines,
        *,
        meta: dict[str, Any] | None = None,
        nested_in: str | None = None,
    ) -> Path:
        assert lines.agent_id is not None
        path = self.agent_path(lines.session_id, lines.agent_id, nested_in=nested_in)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(lines.dumps())
        if meta is not None:
            path.with_name(f"agent-{lines.agent_id}.meta.json").write_text(json.dumps(meta))
        return path

    def write_flat_agent(self, lines: Lines) -> Path:
        assert lines.agent_id is not None
        path = self.project_dir / f"agent-{lines.agent_id}.jsonl"
        path.write_text(lines.dumps())
        return path

    def write_pid_file(self, pid: int, session_id: str, **fields: Any) -> Path:
        folder = self.root / "sessions"
        folder.mkdir(parents=True, exist_ok=True)
        data = {
            "pid": pid,
            "sessionId": session_id,
            "cwd": "/work/proj",
            "startedAt": int(BASE * 1000),
            "version": "2.1.226",
            "kind": "interactive",
            "entrypoint": "cli",
            "status": "busy",
        }
        data.update(fields)
        path = folder / f"{pid}.json"
        path.write_text(json.dumps(data))
        return path


def append(path: Path, text: str) -> None:
    with open(path, "a") as handle:
        handle.write(text)


def age(path: Path, seconds: float) -> None:
    """Make a file look last written `seconds` ago."""
    import time

    then = time.time() - seconds
    os.utime(path, (then, then))


def hook_payload(event: str, session_id: str = "5555aaaa-0000-4000-8000-000000000001",
                 **fields: Any) -> dict[str, Any]:
    """A hook's stdin JSON as Claude Code 2.1.x sends it (common fields, then the event's own)."""
    data: dict[str, Any] = {
        "session_id": session_id,
        "transcript_path": f"/home/me/.claude/projects/-work-proj/{session_id}.jsonl",
        "cwd": "/work/proj",
        "permission_mode": "default",
        "hook_event_name": event,
    }
    data.update(fields)
    return data


def bash_payload(command: str, **fields: Any) -> dict[str, Any]:
    return hook_payload(
        "PreToolUse",
        tool_name="Bash",
        tool_input={"command": command, "description": "run it", "timeout": 120000},
        tool_use_id="toolu_01Bash",
        **fields,
    )
