"""`swarmdeck hook EVENT` as Claude Code runs it: exit 0 always, JSON or nothing on stdout."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from claude_lines import bash_payload, hook_payload
from swarmdeck import paths
from swarmdeck.hook_events import fold
from swarmdeck.hooks.contract import added_context, deny
from swarmdeck.state import StateStore


def _events() -> list[sqlite3.Row]:
    """hook_events as its readers see it: the spooled light calls folded in first."""
    store = StateStore.open_default()
    fold(store)
    with store.read() as conn:
        return conn.execute("SELECT * FROM hook_events ORDER BY id").fetchall()


def test_light_command_prints_nothing_and_is_recorded(run_hook) -> None:
    done = run_hook("pre-tool-use", bash_payload("git status --short && ls -la src"))
    assert done.returncode == 0
    assert done.stdout == ""
    rows = _events()
    assert [(r["event"], r["tool_name"]) for r in rows] == [("PreToolUse", "Bash")]
    assert rows[0]["session_id"] == "5555aaaa-0000-4000-8000-000000000001"
    assert json.loads(rows[0]["payload"])["tool_input"]["command"].startswith("git status")


def test_second_call_uses_the_existing_store(run_hook) -> None:
    run_hook("pre-tool-use", bash_payload("ls"))
    run_hook("pre-tool-use", bash_payload("pwd"))
    assert len(_events()) == 2


def test_malformed_inputs_exit_0_with_nothing_on_stdout(run_hook) -> None:
    inputs = [
        b"",
        b"{not json",
        b"[1, 2, 3]",
        b'"just a string"',
        b"\xff\xfe\x00garbage",
        json.dumps({"hook_event_name": "PreToolUse"}).encode(),
        json.dumps({"hook_event_name": "PreToolUse", "tool_name": "Bash"}).encode(),
        json.dumps(
            {"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": []}
        ).encode(),
        json.dumps(
            {"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": 7}}
        ).encode(),
        json.dumps({"hook_event_name": 12, "session_id": ["x"], "cwd": None}).encode(),
    ]
    for raw in inputs:
        done = run_hook("pre-tool-use", raw)
        assert done.returncode == 0, raw
        assert done.stdout == "", raw


def test_bad_json_leaves_a_not_read_note(run_hook) -> None:
    done = run_hook("pre-tool-use", b"{oops")
    assert done.returncode == 0
    assert "not read" in done.stderr
    assert done.stdout == ""


def test_an_event_it_does_not_know_is_named_on_stderr_and_still_exits_0(run_hook) -> None:
    """A typo in a hand-written settings.json would otherwise turn a hook off without a trace:
    the note names the event and where the known ones are listed; the call is still recorded,
    as a Claude Code event newer than this list would be worth keeping."""
    done = run_hook("Bogus", b"{}")
    assert done.returncode == 0
    assert done.stdout == ""
    assert done.stderr == (
        "swarmdeck hook: event 'Bogus' is none swarmdeck knows (`swarmdeck hook --help` lists"
        " them): recorded, not answered\n"
    )
    assert [row["event"] for row in _events()] == ["Bogus"]
    known = run_hook("stop", b"{}")
    assert known.returncode == 0 and known.stderr == ""


def test_huge_input_is_not_read_and_answered_fast(run_hook) -> None:
    huge = bash_payload("pytest -q", padding="x" * (6 * 1024 * 1024))
    done = run_hook("pre-tool-use", huge, timeout=20)
    assert done.returncode == 0
    assert done.stdout == ""
    assert "input over" in done.stderr


def test_every_event_exits_0_and_is_recorded(run_hook) -> None:
    payloads = {
        "post-tool-use": hook_payload(
            "PostToolUse",
            tool_name="Agent",
            tool_input={"description": "bg", "prompt": "p", "subagent_type": "Explore"},
            tool_use_id="toolu_01Agent",
            tool_response={
                "status": "async_launched",
                "agentId": "a1b2",
                "description": "bg",
                "prompt": "p" * 5000,
                "outputFile": "/tmp/x.output",
            },
            duration_ms=12,
        ),
        "subagent-start": hook_payload("SubagentStart", agent_id="a1b2", agent_type="Explore"),
        "subagent-stop": hook_payload(
            "SubagentStop",
            agent_id="a1b2",
            agent_type="Explore",
            stop_hook_active=False,
            agent_transcript_path="/x/subagents/agent-a1b2.jsonl",
            last_assistant_message="done",
        ),
        "stop": hook_payload(
            "Stop",
            stop_hook_active=False,
            last_assistant_message="ok",
            background_tasks=[
                {"id": "a9", "type": "subagent", "status": "running", "description": "d"}
            ],
        ),
        "session-end": hook_payload("SessionEnd", reason="prompt_input_exit"),
        "notification": hook_payload("Notification", message="waiting", title="t"),
    }
    for event, payload in payloads.items():
        done = run_hook(event, payload)
        assert done.returncode == 0, event
        assert done.stdout == "", event
    rows = _events()
    assert [r["event"] for r in rows] == [
        "PostToolUse", "SubagentStart", "SubagentStop", "Stop", "SessionEnd", "Notification"
    ]
    assert rows[1]["agent_id"] == "a1b2"
    post = json.loads(rows[0]["payload"])
    assert post["tool_response"] == {"status": "async_launched", "agentId": "a1b2"}


def test_payload_event_name_wins_and_argument_fills_in(run_hook) -> None:
    payload = hook_payload("SubagentStart", agent_id="a7")
    run_hook("stop", payload)
    del payload["hook_event_name"]
    run_hook("subagent-stop", payload)
    assert [r["event"] for r in _events()] == ["SubagentStart", "SubagentStop"]


def test_broken_config_never_blocks(run_hook, isolated_home: Path) -> None:
    (isolated_home / "config.toml").write_text("[hooks]\nheavy_patterns = [\n")
    done = run_hook("pre-tool-use", bash_payload("pytest -q"))
    assert done.returncode == 0
    assert done.stdout == ""
    assert "ConfigError" in done.stderr


def test_state_path_holding_another_file_never_blocks(run_hook) -> None:
    db = Path(paths.state_db_path())
    db.parent.mkdir(parents=True, exist_ok=True)
    db.write_bytes(b"not a database at all")
    done = run_hook("pre-tool-use", bash_payload("ls"))
    assert done.returncode == 0
    assert done.stdout == ""
    assert "not recorded" in done.stderr
    assert db.read_bytes() == b"not a database at all"


def test_events_it_does_not_know_are_recorded_and_answered_with_nothing(run_hook) -> None:
    """Claude Code adds events (PermissionRequest, PostToolUseFailure, …): the hook stays out
    of their way."""
    for argument, payload in (
        ("permission-request", hook_payload("PermissionRequest", tool_name="Bash",
                                            tool_input={"command": "rm -rf build"})),
        ("post-tool-use-failure", {k: v for k, v in hook_payload(
            "PostToolUseFailure", tool_name="Bash", error="exit 1").items()
            if k != "hook_event_name"}),
        ("SomethingNew", hook_payload("SomethingNew")),
    ):
        done = run_hook(argument, payload)
        assert done.returncode == 0, argument
        assert done.stdout == "", argument
    assert [r["event"] for r in _events()] == [
        "PermissionRequest", "PostToolUseFailure", "SomethingNew"
    ]


def test_long_texts_stay_under_the_length_claude_code_spills_to_a_file() -> None:
    """Claude Code moves strings over 10 000 characters to a file: the agent would then see a
    path, not the facts."""
    text = "x" * 25_000
    context = added_context("SessionStart", text)["hookSpecificOutput"]["additionalContext"]
    reason = deny(text)["hookSpecificOutput"]["permissionDecisionReason"]
    assert len(context) < 10_000 and len(reason) < 10_000
    assert context.endswith("…") and added_context("PreToolUse", "short")[
        "hookSpecificOutput"]["additionalContext"] == "short"
