"""Files a hook opens that are not what they seem: FIFOs, devices, huge sparse files.

Each one would hang or stall the hook (and with it the agent's next command) if it were opened
blocking or read whole; the hook must answer at once, exit 0 and say nothing it cannot back.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from claude_lines import ClaudeTree, Lines, bash_payload, hook_payload

SID = "cccc3333-0000-4000-8000-000000000020"
QUICK = 6.0
"""Seconds a hook facing a hostile file may take: well under its 7 s budget."""


def _timed_hook(run_hook, event: str, payload: dict) -> tuple[float, object]:
    start = time.monotonic()
    done = run_hook(event, payload, timeout=30)
    return time.monotonic() - start, done


@pytest.mark.parametrize("command", ["ls", "pytest -q"])
def test_a_fifo_config_does_not_hang_the_hook(run_hook, isolated_home: Path, command: str) -> None:
    (isolated_home / "config.toml").unlink()
    os.mkfifo(isolated_home / "config.toml")
    took, done = _timed_hook(run_hook, "pre-tool-use", bash_payload(command))
    assert took < QUICK
    assert done.returncode == 0
    assert done.answer is None or "hookSpecificOutput" in done.answer


def test_a_fifo_settings_cache_does_not_hang_the_hook(run_hook, isolated_home: Path) -> None:
    state = isolated_home / "state"
    state.mkdir(mode=0o700)
    os.mkfifo(state / "hook-settings.json")
    took, done = _timed_hook(run_hook, "pre-tool-use", bash_payload("ls"))
    assert took < QUICK
    assert done.returncode == 0 and done.answer is None


def test_a_fifo_transcript_does_not_hang_the_dispatch_guard(run_hook, isolated_home: Path) -> None:
    (isolated_home / "config.toml").write_text("[hooks]\nmax_running_subagents = 1\n")
    tree = ClaudeTree(isolated_home / "claude")
    transcript = tree.main_path(SID)
    os.mkfifo(transcript)
    payload = _dispatch_payload(transcript)
    took, done = _timed_hook(run_hook, "pre-tool-use", payload)
    assert took < QUICK
    assert done.returncode == 0 and done.answer is None


def _dispatch_payload(transcript: Path) -> dict:
    return hook_payload(
        "PreToolUse",
        session_id=SID,
        transcript_path=str(transcript),
        tool_name="Agent",
        tool_input={"description": "next", "prompt": "Next.", "subagent_type": "general-purpose"},
        tool_use_id="toolu_next",
    )


def _one_running(tree: ClaudeTree) -> Path:
    main = Lines(SID)
    main.prompt("fan out", 0)
    main.agent("toolu_r0", "part 0", "Part 0.", 1)
    return tree.write_main(main)


@pytest.mark.parametrize("kind", ["dev-zero link", "sparse", "fifo"])
def test_only_regular_agent_files_count_as_running_subagents(
    run_hook, isolated_home: Path, kind: str
) -> None:
    (isolated_home / "config.toml").write_text("[hooks]\nmax_running_subagents = 2\n")
    tree = ClaudeTree(isolated_home / "claude")
    transcript = _one_running(tree)
    fake = tree.agent_path(SID, "a9f9f9f9f9f9f9f9f")
    fake.parent.mkdir(parents=True, exist_ok=True)
    if kind == "dev-zero link":
        fake.symlink_to("/dev/zero")
    elif kind == "fifo":
        os.mkfifo(fake)
    else:
        with open(fake, "wb") as handle:
            handle.truncate(2 * 1024**3)
    took, done = _timed_hook(run_hook, "pre-tool-use", _dispatch_payload(transcript))
    assert took < QUICK
    assert done.returncode == 0
    assert done.answer is None, done.answer


def test_a_lone_surrogate_still_gives_utf8_json(run_hook) -> None:
    payload = json.dumps(bash_payload("pytest \udcff")).encode()
    assert b"\\udcff" in payload
    done = run_hook("pre-tool-use", payload)
    assert done.returncode == 0
    assert done.answer is not None
    assert "heavy command" in done.context


def test_a_pattern_that_backtracks_is_cut_by_the_deadline(run_hook, isolated_home: Path) -> None:
    (isolated_home / "config.toml").write_text("[hooks]\nheavy_patterns = ['(a+)+$']\n")
    took, done = _timed_hook(run_hook, "pre-tool-use", bash_payload("a" * 60 + "b"))
    # Uncut, the pattern backtracks for longer than the machine lasts; the cut comes at the
    # reminder's budget (7 s), and a loaded machine adds its start and exit to that.
    assert took < 20.0
    assert done.returncode == 0 and done.answer is None
    assert "not read" in done.stderr


def test_a_fifo_pid_file_does_not_hang_the_dispatch_guard(run_hook, isolated_home: Path) -> None:
    (isolated_home / "config.toml").write_text("[hooks]\nmax_running_subagents = 2\n")
    tree = ClaudeTree(isolated_home / "claude")
    transcript = _one_running(tree)
    sessions = isolated_home / "claude" / "sessions"
    sessions.mkdir(parents=True)
    os.mkfifo(sessions / "4242.json")
    took, done = _timed_hook(run_hook, "pre-tool-use", _dispatch_payload(transcript))
    assert took < QUICK
    assert done.returncode == 0 and done.answer is None
    assert "not read" not in done.stderr
