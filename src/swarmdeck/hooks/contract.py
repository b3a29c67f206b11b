"""The JSON a hook prints, per Claude Code's hook contract (exit 0; stdout starts with `{`).

PreToolUse context goes next to the tool result; a deny names its reason to Claude; SessionStart
context lands at the start of the conversation. Strings over 10 000 characters would be spilled
to a file by Claude Code, so text is kept well under that.
"""

from __future__ import annotations

import json

# The light path does without typing's import time (see cli.py).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TextIO

MAX_CONTEXT = 9000


def _clip(text: str) -> str:
    return text if len(text) <= MAX_CONTEXT else text[: MAX_CONTEXT - 1] + "…"


def added_context(event: str, text: str) -> dict[str, Any]:
    """Context for the agent, without any permission decision (the normal flow goes on)."""
    return {"hookSpecificOutput": {"hookEventName": event, "additionalContext": _clip(text)}}


def deny(reason: str) -> dict[str, Any]:
    """A PreToolUse deny; Claude sees the reason and may act on it."""
    return {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": _clip(reason),
        }
    }


def emit(answer: dict[str, Any] | None, out: TextIO) -> None:
    """Print the answer as one JSON line; no answer prints nothing at all."""
    if answer is None:
        return
    out.write(json.dumps(answer, ensure_ascii=False) + "\n")
    out.flush()
