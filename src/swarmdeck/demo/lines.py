"""Claude Code transcript lines in the shapes Claude Code 2.1.x writes them, stamped now.

The demo's sessions are read by the real sessions probe, so each line carries the envelope of
a real transcript: one content block per assistant line, `toolUseResult` beside `message` on
tool results, background agents launched with `async_launched` and finished by a
`<task-notification>` queue operation.
"""

from __future__ import annotations

import itertools
import json
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

VERSION = "2.1.226"
MODEL = "claude-opus-4-6"

Line = dict[str, Any]


def iso(at: float) -> str:
    """Epoch seconds as Claude Code writes a timestamp: ISO-8601 with milliseconds and 'Z'."""
    moment = datetime.fromtimestamp(at, tz=UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def dumps(line: Line) -> str:
    return json.dumps(line) + "\n"


@dataclass
class Transcript:
    """The lines of one transcript (a main session's, or one subagent's) with one envelope."""

    session_id: str
    cwd: str
    branch: str = "main"
    agent_id: str | None = None
    _last_uuid: str | None = None
    _numbers: itertools.count = field(default_factory=itertools.count)

    def _envelope(self, kind: str, **extra: Any) -> Line:
        number = next(self._numbers)
        uuid = f"{self.session_id[:8]}-{self.agent_id or 'main'}-{number}"
        line: Line = {
            "parentUuid": self._last_uuid,
            "isSidechain": self.agent_id is not None,
            "userType": "external",
            "cwd": self.cwd,
            "sessionId": self.session_id,
            "version": VERSION,
            "gitBranch": self.branch,
            "type": kind,
            "timestamp": iso(time.time()),
            "uuid": uuid,
        }
        if self.agent_id is not None:
            line["agentId"] = self.agent_id
        line.update(extra)
        self._last_uuid = uuid
        return line

    def prompt(self, text: str) -> Line:
        return self._envelope("user", message={"role": "user", "content": text})

    def tool_use(self, tool_id: str, name: str, tool_input: dict[str, Any]) -> Line:
        message = {
            "id": f"msg_{tool_id}",
            "type": "message",
            "role": "assistant",
            "model": MODEL,
            "content": [{"type": "tool_use", "id": tool_id, "name": name, "input": tool_input}],
            "stop_reason": None,
            "usage": {"input_tokens": 1200, "output_tokens": 80},
        }
        return self._envelope("assistant", message=message, requestId=f"req_{tool_id}")

    def bash(self, tool_id: str, command: str, description: str) -> Line:
        return self.tool_use(
            tool_id, "Bash", {"command": command, "description": description, "timeout": 120000}
        )

    def agent(self, tool_id: str, description: str, prompt: str, agent_type: str) -> Line:
        return self.tool_use(
            tool_id,
            "Agent",
            {
                "description": description,
                "prompt": prompt,
                "subagent_type": agent_type,
                "run_in_background": True,
            },
        )

    def result(self, tool_id: str, text: str, tool_use_result: Any = None) -> Line:
        block = {"tool_use_id": tool_id, "type": "tool_result", "content": text}
        extra: dict[str, Any] = {"message": {"role": "user", "content": [block]}}
        if tool_use_result is not None:
            extra["toolUseResult"] = tool_use_result
        return self._envelope("user", **extra)

    def text(self, text: str) -> Line:
        message = {
            "id": f"msg_text_{self.agent_id or 'main'}_{next(self._numbers)}",
            "type": "message",
            "role": "assistant",
            "model": MODEL,
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 900, "output_tokens": 140},
        }
        return self._envelope("assistant", message=message)

    def async_launched(self, tool_id: str, agent_id: str, description: str) -> Line:
        """A background agent's immediate result: a launch, not a completion."""
        return self.result(
            tool_id,
            "Async agent launched successfully.\n"
            f"agentId: {agent_id} (This is an internal ID for your use, do not mention it)\n"
            "The agent is working in the background.",
            tool_use_result={
                "isAsync": True,
                "status": "async_launched",
                "agentId": agent_id,
                "description": description,
                "prompt": "…",
                "outputFile": f"/tmp/claude-demo/tasks/{agent_id}.output",
                "resolvedModel": MODEL,
            },
        )

    def notification(self, agent_id: str, tool_id: str, status: str, summary: str) -> Line:
        """The `<task-notification>` queue operation that says a background agent finished."""
        content = "\n".join(
            [
                "<task-notification>",
                f"<task-id>{agent_id}</task-id>",
                f"<tool-use-id>{tool_id}</tool-use-id>",
                f"<output-file>/tmp/claude-demo/tasks/{agent_id}.output</output-file>",
                f"<status>{status}</status>",
                f"<summary>{summary}</summary>",
                "<usage>total_tokens: 5200\ntool_uses: 3\nduration_ms: 20000</usage>",
                "</task-notification>",
            ]
        )
        return {
            "type": "queue-operation",
            "operation": "enqueue",
            "timestamp": iso(time.time()),
            "sessionId": self.session_id,
            "content": content,
        }
