"""The hook's stdin JSON as a typed value: Claude Code's common fields and each event's own.

Any field may be missing or of another type in some Claude Code version; every accessor answers
None (or an empty dict) rather than failing, and the caller decides what a missing field means.
"""

from __future__ import annotations

import io
import json

from swarmdeck.hook_spool import field_text

MAX_INPUT = 4 * 1024 * 1024
"""Larger input is not read: a hook must answer fast, and no event it acts on is this big."""

EVENTS = {
    "pre-tool-use": "PreToolUse",
    "post-tool-use": "PostToolUse",
    "post-tool-use-failure": "PostToolUseFailure",
    "session-start": "SessionStart",
    "subagent-start": "SubagentStart",
    "subagent-stop": "SubagentStop",
    "stop": "Stop",
    "session-end": "SessionEnd",
    "user-prompt-submit": "UserPromptSubmit",
    "notification": "Notification",
    "permission-request": "PermissionRequest",
    "pre-compact": "PreCompact",
}
"""`swarmdeck hook EVENT` names and the Claude Code event names they stand for."""
KNOWN_EVENTS = frozenset(EVENTS.values())
"""The Claude Code events swarmdeck records and acts on; any other is named on stderr."""


class InputNotRead(Exception):
    """The hook's input cannot be used; the message says why, in a few words."""


def event_name(argument: str) -> str:
    """Claude Code's name for `swarmdeck hook ARGUMENT`: the known events in any spelling
    (`pre-tool-use`, `pre_tool_use`, `PreToolUse`), any other kebab or snake name in the
    PascalCase Claude Code uses (`post-tool-use-failure` → `PostToolUseFailure`)."""
    stripped = argument.strip()
    lowered = stripped.lower().replace("_", "-")
    if lowered in EVENTS:
        return EVENTS[lowered]
    for name in EVENTS.values():
        if name.lower() == lowered.replace("-", ""):
            return name
    if "-" in lowered:
        return "".join(part.capitalize() for part in lowered.split("-"))
    return stripped


class HookInput:
    """One hook call's input.

    A plain class with slots: a dataclass or a named tuple costs more to define than this whole
    module is allowed on the light path.
    """

    __slots__ = ("data", "event")

    def __init__(self, event: str, data: dict[str, object]) -> None:
        self.event = event
        self.data = data

    def __repr__(self) -> str:
        return f"HookInput({self.event!r}, session_id={self.session_id!r})"

    def text(self, key: str) -> str | None:
        return field_text(self.data, key)

    @property
    def session_id(self) -> str | None:
        return self.text("session_id")

    @property
    def transcript_path(self) -> str | None:
        return self.text("transcript_path")

    @property
    def cwd(self) -> str | None:
        return self.text("cwd")

    @property
    def agent_id(self) -> str | None:
        """Set when the call comes from inside a subagent."""
        return self.text("agent_id")

    @property
    def tool_name(self) -> str | None:
        return self.text("tool_name")

    @property
    def tool_use_id(self) -> str | None:
        return self.text("tool_use_id")

    @property
    def tool_input(self) -> dict[str, object]:
        value = self.data.get("tool_input")
        return value if isinstance(value, dict) else {}

    @property
    def command(self) -> str | None:
        """The shell command of a Bash call."""
        value = self.tool_input.get("command")
        return value if isinstance(value, str) and value.strip() else None

    @property
    def source(self) -> str | None:
        """How a session started: startup, resume, clear, compact or fork."""
        return self.text("source")


def read_input(stream: io.BufferedIOBase, event_argument: str, limit: int = MAX_INPUT) -> HookInput:
    """Read and parse stdin; the payload's own `hook_event_name` wins over the argument."""
    return parse_input(read_raw(stream, limit), event_argument)


def read_raw(stream: io.BufferedIOBase, limit: int = MAX_INPUT) -> bytes:
    """The bytes of stdin, at most `limit` of them."""
    raw = stream.read(limit + 1)
    if len(raw) > limit:
        raise InputNotRead(f"input over {limit} bytes")
    return raw


def parse_input(raw: bytes, event_argument: str) -> HookInput:
    """The input as read by json; the payload's own `hook_event_name` wins over the argument."""
    if not raw.strip():
        raise InputNotRead("no input")
    try:
        data = json.loads(raw)
    except ValueError as error:
        raise InputNotRead(f"not JSON ({error.__class__.__name__})") from None
    if not isinstance(data, dict):
        raise InputNotRead("not a JSON object")
    named = data.get("hook_event_name")
    event = named if isinstance(named, str) and named else event_name(event_argument)
    if not event:
        raise InputNotRead("no event name")
    return HookInput(event=event, data=data)
