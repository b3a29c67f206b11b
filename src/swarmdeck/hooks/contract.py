"""The JSON a hook prints, per Claude Code's hook contract (exit 0; stdout starts with `{`).

PreToolUse context goes next to the tool result; a deny names its reason to Claude; SessionStart
context lands at the start of the conversation. Strings over 10 000 characters would be spilled
to a file by Claude Code, so text is kept well under that.
"""

from __future__ import annotations

import io

MAX_CONTEXT = 9000


def _clip(text: str) -> str:
    return text if len(text) <= MAX_CONTEXT else text[: MAX_CONTEXT - 1] + "…"


def added_context(event: str, text: str) -> dict[str, object]:
    """Context for the agent, without any permission decision (the normal flow goes on)."""
    return {"hookSpecificOutput": {"hookEventName": event, "additionalContext": _clip(text)}}


def deny(reason: str) -> dict[str, object]:
    """A PreToolUse deny; Claude sees the reason and may act on it."""
    return {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": _clip(reason),
        }
    }


def emit(answer: dict[str, object] | None, out: io.TextIOBase) -> None:
    """Print the answer as one JSON line of UTF-8; no answer prints nothing at all.

    Text taken from the input may hold lone surrogates (JSON allows `\\udcff`, UTF-8 does not):
    they become `?`, and the bytes go to the stream's buffer, so the locale's encoding and
    error handler never decide what Claude Code reads.
    """
    if answer is None:
        return
    import json  # here: a light call answers nothing, and json costs it re and enum

    text = json.dumps(answer, ensure_ascii=False) + "\n"
    data = text.encode("utf-8", "replace")
    buffer = getattr(out, "buffer", None)
    if buffer is None:
        out.write(data.decode("utf-8"))
    else:
        out.flush()
        buffer.write(data)
        buffer.flush()
    out.flush()
