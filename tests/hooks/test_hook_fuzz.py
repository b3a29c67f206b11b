"""Generated hook inputs across the six installed events: the hook always answers in time.

Each input is built from a seeded generator (so a failure names an input that can be rebuilt):
well-formed payloads with hostile values (commands made to make a regex crawl, lone
surrogates, control characters, megabyte strings, transcript paths that are FIFOs, devices or
folders), fields of the wrong type, and inputs that are not JSON at all. The hook runs
in-process, as the console script's `run`, so thousands fit in CI time. For every input: no
exception escapes, the output is nothing or one line of UTF-8 JSON, nothing is denied except
by the dispatch guard, and the call ends within its event's budget.
"""

from __future__ import annotations

import io
import json
import os
import random
import time
from pathlib import Path
from typing import Any

import pytest

from swarmdeck.hooks import entry
from swarmdeck.hooks.deadline import RECORD_BUDGET, answer_budget
from swarmdeck.hooks.payload import event_name

EVENTS = ["pre-tool-use", "post-tool-use", "session-start", "subagent-start", "subagent-stop",
          "stop"]
"""The events `hooks install` wires up."""
WEIGHTS = [8, 3, 1, 2, 2, 2]
"""PreToolUse is the event that classifies; SessionStart is the slow one (probes, git)."""

HEAVY = ["pytest -q", "make -j8 test", "cargo test", "npm run build", "torchrun x.py", "./bench",
         "python -m pytest", "uv run pytest", "cmake --build b", "go test ./...", "tox"]
LIGHT = ["ls -la", "git status", "echo hi", "grep pytest x", "cat f", "cd /tmp", "true"]
GLUE = [";", " && ", " | ", "\n", "\r\n", " & ", "(", ")", "`", "$(", " ", "  ", "\t", "A=1 ",
        "env ", "timeout 5 ", "sudo ", "'", '"', "\\", "#", "a=;", "/", "./"]
ODD = ["\udcff", "\ud800", "é", "🙂", "\x00", "\x1b[2J", "\u2028", "\ufeff", "%s", "{}", "..."]
BOMBS = ["a=;", "(make ", ";", "a/", "pytest;", "make ", " ", "a='", "python -x ", "torch;"]
TOOLS = ["Bash", "Agent", "Task", "Read", "Edit", "mcp__x__y", "", "bash", 7, None]


def _command(rng: random.Random) -> Any:
    roll = rng.random()
    if roll < 0.04:
        return rng.choice(BOMBS) * rng.choice([1000, 5000, 20000, 100000])
    if roll < 0.05:
        return "pytest " + "A" * rng.choice([64 * 1024, 1024 * 1024])
    if roll < 0.08:
        return rng.choice([None, 1, [], {"command": "pytest"}, "", "   ", True])
    parts = [rng.choice(HEAVY + LIGHT)]
    for _ in range(rng.randrange(0, 8)):
        parts.append(rng.choice(GLUE + ODD + HEAVY + LIGHT))
    return "".join(parts)


def _path(rng: random.Random, places: dict[str, str]) -> Any:
    return rng.choice([*places.values(), "/nonexistent/x.jsonl", "", "relative.jsonl", 3, None,
                       "/dev/zero", "/", "\x00bad", "/proc/self/mem"])


def _text(rng: random.Random) -> Any:
    return rng.choice(["", "x", "é" * 3, "\udcff", "a" * 5000, 0, -1, 1.5, None, [], {}, True,
                       "5555aaaa-0000-4000-8000-000000000001", "../../etc/passwd"])


def _payload(rng: random.Random, event: str, places: dict[str, str]) -> dict[str, Any]:
    session = f"5555aaaa-0000-4000-8000-00000000000{rng.randrange(3)}"
    data: dict[str, Any] = {
        "session_id": rng.choice([_text(rng), session]),
        "transcript_path": _path(rng, places),
        "cwd": rng.choice([places["folder"], "/nonexistent", "/", places["fifo"], _text(rng)]),
        "permission_mode": rng.choice(["default", "plan", 5]),
        "hook_event_name": rng.choice([event_name(event)] * 6 + [_text(rng), "PreToolUse"]),
    }
    if event in ("pre-tool-use", "post-tool-use"):
        tool = rng.choice(TOOLS)
        data["tool_name"] = tool
        data["tool_use_id"] = rng.choice(["toolu_01", _text(rng)])
        if tool in ("Agent", "Task"):
            data["tool_input"] = {"description": _text(rng), "prompt": _text(rng),
                                  "subagent_type": _text(rng)}
        else:
            data["tool_input"] = rng.choice(
                [{"command": _command(rng), "description": _text(rng)}, _text(rng)]
            )
        if event == "post-tool-use":
            data["tool_response"] = rng.choice([{"status": "completed", "agentId": "a1"},
                                                _text(rng), {"x": [1] * 100}])
    elif event == "session-start":
        data["source"] = rng.choice(["startup", "resume", "clear", "compact", "fork", _text(rng)])
    elif event in ("subagent-start", "subagent-stop"):
        data["agent_id"] = _text(rng)
        data["agent_type"] = _text(rng)
    else:
        data["stop_hook_active"] = rng.choice([True, False, "x"])
        data["background_tasks"] = rng.choice([[], [{"id": 1, "status": "running"}], "x", [3]])
    for key in list(data):
        if rng.random() < 0.05:
            del data[key]
    return data


def _stdin(rng: random.Random, event: str, places: dict[str, str]) -> bytes:
    raw = json.dumps(_payload(rng, event, places)).encode()
    roll = rng.random()
    if roll < 0.03:
        return raw[: rng.randrange(len(raw))]
    if roll < 0.05:
        return rng.choice([b"", b"   ", b"[]", b"null", b"\xff\xfe{}", b'{"a":' * 2000, b"42"])
    if roll < 0.06:
        return raw.replace(b'"', b"'", 3)
    return raw


def _places(root: Path) -> dict[str, str]:
    folder = root / "work"
    folder.mkdir()
    fifo = root / "fifo.jsonl"
    os.mkfifo(fifo)
    garbage = root / "garbage.jsonl"
    garbage.write_bytes(os.urandom(4096))
    transcript = root / "t.jsonl"
    transcript.write_text('{"type":"user","timestamp":"2026-01-01T00:00:00Z"}\n')
    zero = root / "zero.jsonl"
    zero.symlink_to("/dev/zero")
    return {"folder": str(folder), "fifo": str(fifo), "garbage": str(garbage),
            "transcript": str(transcript), "zero": str(zero), "dir": str(folder)}


def _call(event: str, stdin: bytes) -> tuple[bytes, float]:
    out_bytes = io.BytesIO()
    out = io.TextIOWrapper(out_bytes, encoding="utf-8", errors="strict", write_through=True)
    err = io.StringIO()
    start = time.monotonic()
    entry.run([event], io.BytesIO(stdin), out, err)
    took = time.monotonic() - start
    out.flush()
    return out_bytes.getvalue(), took


def _check(event: str, stdin: bytes, output: bytes, took: float, dispatch_may_deny: bool) -> None:
    where = f"{event} {stdin[:200]!r}"
    assert took <= answer_budget(event_name(event)) + RECORD_BUDGET + 0.5, where
    if not output:
        return
    text = output.decode("utf-8")  # strict: the bytes are UTF-8
    assert text.endswith("\n") and text.count("\n") == 1, where
    answer = json.loads(text)
    assert isinstance(answer, dict) and list(answer) == ["hookSpecificOutput"], where
    decision = answer["hookSpecificOutput"].get("permissionDecision")
    if decision is not None:
        assert decision == "deny" and dispatch_may_deny, where
        data = json.loads(stdin)
        assert data.get("tool_name") in ("Agent", "Task"), where


def _fuzz(seed: int, count: int, root: Path, dispatch_may_deny: bool) -> dict[str, int]:
    rng = random.Random(seed)
    places = _places(root)
    seen = dict.fromkeys(EVENTS, 0)
    for _ in range(count):
        event = rng.choices(EVENTS, WEIGHTS)[0]
        stdin = _stdin(rng, event, places)
        output, took = _call(event, stdin)
        _check(event, stdin, output, took, dispatch_may_deny)
        seen[event] += 1
    return seen


def test_generated_inputs_with_the_default_config(tmp_path: Path) -> None:
    seen = _fuzz(16, 1500, tmp_path, dispatch_may_deny=False)
    assert sum(seen.values()) == 1500 and all(seen.values()), seen


def test_generated_inputs_with_the_dispatch_guard_on(tmp_path: Path, isolated_home: Path) -> None:
    (isolated_home / "config.toml").write_text("[hooks]\nmax_running_subagents = 1\n")
    seen = _fuzz(1616, 600, tmp_path, dispatch_may_deny=True)
    assert sum(seen.values()) == 600 and all(seen.values()), seen


@pytest.mark.parametrize("event", EVENTS)
def test_every_event_survives_input_that_is_not_json(event: str) -> None:
    for stdin in (b"", b"\xff", b"{", b"[1]", b'{"tool_input": 1}'):
        output, took = _call(event, stdin)
        _check(event, stdin, output, took, dispatch_may_deny=False)
