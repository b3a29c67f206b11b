"""What a fresh subagent needs to continue one that stopped, read from its transcript alone.

The main agent that reads a stopped subagent's transcript itself fills its own context with it;
`swarmdeck handover AGENT_ID` reads it instead and gives the few facts that matter: the task as
it was dispatched, the files it wrote or edited, the commands it ran with their exit status and
the tail of their output (bounded), the tool call it was in when it stopped, and its last
message, as the text of a new dispatch prompt (or JSON).

The transcript is found where Claude Code writes it: `<project>/<session>/subagents/` (nested
folders included) or, in 2.0.x, `<project>/agent-<id>.jsonl`.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from swarmdeck.probes.claude.jsonl_tail import parse_line
from swarmdeck.probes.claude.transcript_fields import first_text, text_of, tool_summary

WRITING_TOOLS = {"Write": "file_path", "Edit": "file_path", "MultiEdit": "file_path",
                 "NotebookEdit": "notebook_path"}
"""The tools that change a file, with the input naming it."""
SHELL_TOOLS = frozenset({"Bash"})
TAIL_LINES = 12
TAIL_CHARS = 1500
"""The most of a command's output a handover repeats: its last lines, within this many chars."""
MAX_COMMANDS = 40
"""Commands listed; older ones are counted, not shown."""
_EXIT = re.compile(r"^Exit code (\d+)")


class HandoverError(Exception):
    """No transcript for the agent id could be read; the message says where it looked."""


@dataclass
class Command:
    """One shell command the agent ran, and how it ended."""

    command: str
    exit: str
    """"0", "1", …; "error" when it failed without a code; "no result" when it never ended."""
    tail: str


@dataclass
class Handover:
    agent_id: str
    transcript: str
    agent_type: str = ""
    description: str = ""
    prompt: str = ""
    files: list[str] = field(default_factory=list)
    commands: list[Command] = field(default_factory=list)
    commands_left_out: int = 0
    in_flight: str = ""
    """The tool call it had started and never got a result for ("" when none)."""
    interrupted: bool = False
    last_message: str = ""

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["handover"] = self.text()
        return data

    def text(self) -> str:
        """A dispatch prompt for the subagent that takes over."""
        who = self.agent_type or "subagent"
        about = f" ({self.description})" if self.description else ""
        how = "was interrupted" if self.interrupted or self.in_flight else "stopped"
        parts = [
            f"You take over from {who} {self.agent_id}{about}, which {how} before finishing."
            " Its transcript was read for you; do not read it again.",
            "",
            "Its task, as it was dispatched:",
            _indent(self.prompt or "(no prompt found)"),
        ]
        if self.files:
            parts += ["", "Files it wrote or edited (check them before changing them again):"]
            parts += [f"  {name}" for name in self.files]
        if self.commands:
            parts += ["", "Commands it ran, with their exit status and last output:"]
            if self.commands_left_out:
                parts.append(f"  ({self.commands_left_out} earlier commands left out)")
            for command in self.commands:
                parts.append(f"  $ {command.command}  -> exit {command.exit}")
                if command.tail:
                    parts.append(_indent(command.tail, "      "))
        if self.in_flight:
            parts += ["", f"It was in the middle of: {self.in_flight} (no result: start there)."]
        parts += ["", "Its last message:", _indent(self.last_message or "(none)")]
        parts += ["", "Continue the task from where it stopped, and report as it was asked to."]
        return "\n".join(parts)


def _indent(text: str, prefix: str = "  ") -> str:
    return "\n".join(prefix + line for line in text.splitlines()) or prefix.rstrip()


def find_transcript(claude_dir: Path, agent_id: str) -> Path:
    """The agent's own transcript file; HandoverError when there is none."""
    if not re.fullmatch(r"[A-Za-z0-9_@-]+", agent_id):
        raise HandoverError(f"{agent_id!r} is no agent id (letters, digits, '-', '_', '@')")
    name = f"agent-{agent_id}.jsonl"
    projects = claude_dir / "projects"
    found = sorted(projects.glob(f"*/*/subagents/**/{name}")) + sorted(projects.glob(f"*/{name}"))
    if not found:
        raise HandoverError(
            f"no transcript of agent {agent_id} under {projects} (looked for {name} in each"
            " session's subagents folder and each project folder)"
        )
    return max(found, key=lambda path: path.stat().st_mtime)


def read_handover(claude_dir: Path, agent_id: str) -> Handover:
    """The handover of one subagent, from its transcript (and its .meta.json when there is one)."""
    path = find_transcript(claude_dir, agent_id)
    handover = Handover(agent_id=agent_id, transcript=str(path))
    meta = path.with_name(f"agent-{agent_id}.meta.json")
    try:
        data = json.loads(meta.read_text())
    except (OSError, ValueError):
        data = {}
    if isinstance(data, dict):
        handover.agent_type = str(data.get("agentType") or "")
        handover.description = str(data.get("description") or "")
    try:
        lines = path.read_bytes().splitlines()
    except OSError as error:
        raise HandoverError(f"cannot read {path}: {error.strerror}") from None
    fill_from(handover, [record for raw in lines if (record := parse_line(raw)) is not None])
    return handover


def fill_from(handover: Handover, records: list[dict[str, Any]]) -> None:
    """Fill `handover` from the transcript's records, in order."""
    calls: dict[str, tuple[str, str]] = {}
    """Open tool calls by id: (tool name, summary)."""
    commands: dict[str, Command] = {}
    ordered: list[Command] = []
    for record in records:
        message = record.get("message")
        if not isinstance(message, dict):
            continue
        content = message.get("content")
        if record.get("type") == "user":
            if not handover.prompt and not _has_tool_result(content):
                handover.prompt = first_text(content).strip()
                continue
            if isinstance(content, str) and "[Request interrupted by user" in content:
                handover.interrupted = True
            for block in content if isinstance(content, list) else []:
                if not isinstance(block, dict):
                    continue
                if block.get("type") == "text" and "[Request interrupted by user" in str(
                    block.get("text")
                ):
                    handover.interrupted = True
                if block.get("type") != "tool_result":
                    continue
                call_id = block.get("tool_use_id")
                if not isinstance(call_id, str):
                    continue
                calls.pop(call_id, None)
                if call_id in commands:
                    _ended(commands[call_id], block, record.get("toolUseResult"))
        elif record.get("type") == "assistant" and isinstance(content, list):
            for block in content:
                if not isinstance(block, dict):
                    continue
                if block.get("type") == "text" and str(block.get("text") or "").strip():
                    handover.last_message = str(block["text"]).strip()
                if block.get("type") != "tool_use":
                    continue
                name, tool_input = str(block.get("name") or ""), block.get("input")
                tool_input = tool_input if isinstance(tool_input, dict) else {}
                call_id = block.get("id")
                if isinstance(call_id, str):
                    calls[call_id] = (name, tool_summary(name, tool_input))
                if name in WRITING_TOOLS:
                    target = tool_input.get(WRITING_TOOLS[name])
                    if isinstance(target, str) and target not in handover.files:
                        handover.files.append(target)
                if name in SHELL_TOOLS and isinstance(call_id, str):
                    command = Command(str(tool_input.get("command") or ""), "no result", "")
                    commands[call_id] = command
                    ordered.append(command)
    if calls:
        name, summary = list(calls.values())[-1]
        handover.in_flight = f"{name} {summary}".strip()
    handover.commands_left_out = max(0, len(ordered) - MAX_COMMANDS)
    handover.commands = ordered[-MAX_COMMANDS:]


def _has_tool_result(content: Any) -> bool:
    return isinstance(content, list) and any(
        isinstance(block, dict) and block.get("type") == "tool_result" for block in content
    )


def _ended(command: Command, block: dict[str, Any], extra: Any) -> None:
    """How a command's tool_result says it ended: Claude Code writes "Exit code N" first in
    a failed command's result, and stdout/stderr in `toolUseResult`."""
    text = text_of(block.get("content"))
    if isinstance(extra, dict) and ("stdout" in extra or "stderr" in extra):
        output = "\n".join(
            str(extra.get(key) or "") for key in ("stdout", "stderr") if extra.get(key)
        )
    else:
        output = text
    code = _EXIT.match(text.strip())
    if block.get("is_error") is True:
        command.exit = code.group(1) if code else "error"
        if isinstance(extra, dict) and extra.get("interrupted"):
            command.exit = "interrupted"
    else:
        command.exit = "0"
    command.tail = tail(output)


def tail(text: str) -> str:
    """The last TAIL_LINES lines of `text`, at most TAIL_CHARS characters."""
    lines = text.rstrip().splitlines()[-TAIL_LINES:]
    kept = "\n".join(lines)
    return kept if len(kept) <= TAIL_CHARS else "…" + kept[-TAIL_CHARS:]
