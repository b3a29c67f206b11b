"""Each guard through real `swarmdeck hook` processes, in the strict preset: its sample call
(hooks/guards.py SAMPLES) is refused with a reason naming the guard and the allowed form, and
its twin passes. The same table is what the selftest turns into its cells."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest

from claude_lines import hook_payload
from swarmdeck.hooks.guard_table import GUARDS
from swarmdeck.hooks.guards import SAMPLE_CONFIG, SAMPLES, Sample

THREADS = 3
SID = "cccc3333-0000-4000-8000-000000000031"


def _config(home: Path, extra: str = "") -> None:
    (home / "config.toml").write_text(
        f"[cores]\nheavy_threads = {THREADS}\n" + SAMPLE_CONFIG + extra
    )


def _payload(data: dict[str, Any], home: Path, **more: Any) -> dict[str, Any]:
    fields = json.loads(json.dumps(data).replace("{threads}", str(THREADS)))
    event = fields.pop("hook_event_name")
    fields.setdefault("session_id", SID)
    fields.setdefault("cwd", str(home))
    fields.update(more)
    return hook_payload(event, **fields)


def _decision(answer: dict[str, Any] | None) -> tuple[str, str]:
    """("deny"|"block"|"", reason) of a hook's answer."""
    if not answer:
        return "", ""
    if answer.get("decision") == "block":
        return "block", answer.get("reason", "")
    out = answer.get("hookSpecificOutput", {})
    return out.get("permissionDecision", ""), out.get("permissionDecisionReason", "")


def _setup(sample: Sample, run_hook, home: Path) -> dict[str, Any]:
    """What the sample's call needs around it; returns fields to add to both calls."""
    if sample.setup == "handed-back":
        stop = hook_payload("SubagentStop", session_id=SID, agent_id="a-done",
                            agent_type="reviewer", last_assistant_message="Done.",
                            cwd=str(home))
        assert run_hook("subagent-stop", stop).returncode == 0
    if sample.setup == "scratch-held":
        other = _payload(sample.denied, home, tool_use_id="toolu_other",
                         session_id="dddd4444-0000-4000-8000-000000000001")
        assert _decision(run_hook("pre-tool-use", other).answer)[0] == ""
    if sample.setup == "made-folder":
        # The copy the transcript records is made by that command, as the subagent made it:
        # a folder that was there before would be the project's, never one to delete.
        (home / "src").mkdir()
        subprocess.run(["cp", "-r", "src", "sample-build-copy"], cwd=home, check=True)
        transcript = home / "agent-a-sample.jsonl"
        line = {"type": "assistant", "isSidechain": True, "agentId": "a-sample",
                "message": {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "toolu_cp", "name": "Bash",
                     "input": {"command": "cp -r src sample-build-copy"}}]}}
        transcript.write_text(json.dumps(line) + "\n")
        return {"agent_transcript_path": str(transcript)}
    if sample.setup == "limit":
        _config(home, "\n[hooks]\nmax_running_subagents = 1\n")
        start = hook_payload("SubagentStart", session_id=SID, agent_id="a-running",
                             agent_type="reviewer", cwd=str(home))
        assert run_hook("subagent-start", start).returncode == 0
    return {}


def _release(sample: Sample, run_hook, home: Path) -> None:
    """Between the denied call and its twin: the limit sample's running subagent ends."""
    if sample.setup == "limit":
        stop = hook_payload("SubagentStop", session_id=SID, agent_id="a-running",
                            agent_type="reviewer", last_assistant_message="Done.",
                            cwd=str(home))
        assert run_hook("subagent-stop", stop).returncode == 0


def test_every_guard_has_one_sample_in_order() -> None:
    assert [sample.guard for sample in SAMPLES] == [guard.name for guard in GUARDS]


@pytest.mark.parametrize("sample", SAMPLES, ids=[s.guard for s in SAMPLES])
def test_the_guard_refuses_its_sample_and_lets_its_twin_pass(
    sample: Sample, run_hook, isolated_home: Path
) -> None:
    _config(isolated_home)
    more = _setup(sample, run_hook, isolated_home)
    denied = run_hook(sample.event, _payload(sample.denied, isolated_home, **more))
    assert denied.returncode == 0, denied.stderr
    decision, reason = _decision(denied.answer)
    assert decision in ("deny", "block"), (denied.stdout, denied.stderr)
    assert reason.startswith(f"swarmdeck guard {sample.guard} (refused): "), reason
    _release(sample, run_hook, isolated_home)
    allowed = run_hook(sample.event, _payload(sample.allowed, isolated_home, **more))
    assert allowed.returncode == 0, allowed.stderr
    assert _decision(allowed.answer)[0] == "", allowed.stdout


def test_a_deny_is_recorded_counted_and_raised_as_an_alert(run_hook, isolated_home: Path) -> None:
    _config(isolated_home)
    sample = SAMPLES[0]
    done = run_hook("pre-tool-use", _payload(sample.denied, isolated_home))
    assert _decision(done.answer)[0] == "deny"
    db = sqlite3.connect(isolated_home / "state" / "state.db")
    [(payload,)] = db.execute(
        "SELECT payload FROM hook_events WHERE tool_name = 'Bash'").fetchall()
    verdict = json.loads(payload)["swarmdeck_guard"][0]
    assert verdict["guard"] == "heavy-outside-cage" and verdict["decision"] == "deny"
    alerts = dict(db.execute("SELECT key, message FROM alerts").fetchall())
    assert "cargo test" in alerts[f"guard:heavy-outside-cage:{SID}"]


def test_the_remind_preset_denies_nothing_but_reminds_of_heavy_work(
    run_hook, isolated_home: Path
) -> None:
    for sample in SAMPLES:
        if sample.setup or sample.event != "pre-tool-use":
            continue
        done = run_hook(sample.event, _payload(sample.denied, isolated_home))
        assert _decision(done.answer)[0] == "", (sample.guard, done.stdout)
    heavy = run_hook("pre-tool-use", _payload(SAMPLES[0].denied, isolated_home))
    assert "is a heavy command (cargo)" in heavy.context


def test_an_internal_error_allows_with_one_line(run_hook, isolated_home: Path) -> None:
    """A scratch hold that cannot be written (its file is a folder) fails the dispatch's
    answer: the call is allowed, with one line on stderr."""
    _config(isolated_home)
    (isolated_home / "state" / "scratch-locks.json").mkdir(parents=True)
    good = next(s for s in SAMPLES if s.guard == "scratch-lock").allowed
    done = run_hook("pre-tool-use", _payload(good, isolated_home))
    assert done.returncode == 0 and done.answer is None
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("swarmdeck hook: "), done.stderr


@pytest.mark.parametrize("sample", SAMPLES, ids=[s.guard for s in SAMPLES])
def test_the_guards_break_switch_lets_its_sample_through(
    sample: Sample, run_hook, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Inside a selftest (a marker naming this live process), `SWARMDECK_BREAK=guard-NAME`
    switches the guard's decisive test off: its sample is no longer refused by it."""
    from swarmdeck.breaks import BREAK_VARIABLE, MARKER_VARIABLE, SWITCHES, write_marker

    assert f"guard-{sample.guard}" in SWITCHES
    marker = isolated_home / "selftest-marker"
    write_marker(str(marker))
    _config(isolated_home)
    more = _setup(sample, run_hook, isolated_home)
    monkeypatch.setenv(MARKER_VARIABLE, str(marker))
    monkeypatch.setenv(BREAK_VARIABLE, f"guard-{sample.guard}")
    done = run_hook(sample.event, _payload(sample.denied, isolated_home, **more))
    assert done.returncode == 0, done.stderr
    assert f"guard {sample.guard} " not in _decision(done.answer)[1], done.stdout


def _sample(name: str) -> Sample:
    return next(sample for sample in SAMPLES if sample.guard == name)


def test_a_scratch_hold_of_a_session_that_ended_is_free(run_hook, isolated_home: Path) -> None:
    """Where Claude Code keeps pid files, a hold whose session has none is not live."""
    _config(isolated_home)
    sample = _sample("scratch-lock")
    _setup(sample, run_hook, isolated_home)
    (isolated_home / "claude" / "sessions").mkdir(parents=True)
    done = run_hook("pre-tool-use", _payload(sample.denied, isolated_home))
    assert _decision(done.answer)[0] == "", done.stdout


def test_a_blocked_handback_is_no_handback_for_continuation(
    run_hook, isolated_home: Path
) -> None:
    """A SubagentStop the handback guard blocked keeps the subagent working: a message to it
    is a message to a running subagent."""
    _config(isolated_home)
    handback = _sample("handback")
    more = _setup(handback, run_hook, isolated_home)
    blocked = run_hook("subagent-stop", _payload(handback.denied, isolated_home, **more))
    assert _decision(blocked.answer)[0] == "block"
    message = {"hook_event_name": "PreToolUse", "tool_name": "SendMessage",
               "tool_input": {"to": "a-sample", "message": "go on"}}
    done = run_hook("pre-tool-use", _payload(message, isolated_home))
    assert _decision(done.answer)[0] == "", done.stdout
    handed = run_hook("subagent-stop", _payload(handback.allowed, isolated_home, **more))
    assert _decision(handed.answer)[0] == ""
    again = run_hook("pre-tool-use", _payload(message, isolated_home))
    assert _decision(again.answer)[0] == "deny"


@pytest.mark.parametrize(
    "command,allowed",
    [
        ("cargo test --workspace", "run --label cargo -- cargo test --workspace"),
        ("bash verify.sh", "run --label cargo -- bash verify.sh"),
        ("nohup ionice -c3 pytest -q", "run --label pytest -- nohup ionice -c3 pytest -q"),
        ("cd . && make test", "run --label make -- bash -c 'cd . && make test'"),
    ],
)
def test_the_deny_names_the_exact_line_to_run_instead(
    command: str, allowed: str, run_hook, isolated_home: Path
) -> None:
    """The allowed form is the command's own words under `swarmdeck run`, labelled by the
    program the heavy work runs (here read from the script), or `bash -c` for a sequence."""
    _config(isolated_home)
    (isolated_home / "verify.sh").write_text("set -e\ncargo test\n")
    done = run_hook("pre-tool-use", _payload(
        {"hook_event_name": "PreToolUse", "tool_name": "Bash",
         "tool_input": {"command": command}}, isolated_home))
    decision, reason = _decision(done.answer)
    assert decision == "deny" and reason.endswith(allowed), reason


def test_the_cron_create_tool_is_a_timer(run_hook, isolated_home: Path) -> None:
    _config(isolated_home)
    cron = {"hook_event_name": "PreToolUse", "tool_name": "CronCreate",
            "tool_input": {"cron": "*/5 * * * *", "prompt": "check the build"}}
    decision, reason = _decision(run_hook("pre-tool-use", _payload(cron, isolated_home)).answer)
    assert decision == "deny" and "swarmdeck watch --wake" in reason


def test_with_a_heavy_prefix_the_main_agent_declares_its_heavy_work(
    run_hook, isolated_home: Path
) -> None:
    (isolated_home / "config.toml").write_text(
        '[guards]\npreset = "strict"\nheavy_prefix = "SWARMDECK_HEAVY=commit"\n'
    )
    caged = "swarmdeck run --label cargo -- cargo test"
    done = run_hook("pre-tool-use", _payload(
        {"hook_event_name": "PreToolUse", "tool_name": "Bash",
         "tool_input": {"command": caged}}, isolated_home))
    decision, reason = _decision(done.answer)
    assert decision == "deny" and reason.startswith("swarmdeck guard heavy-by-subagent")
    assert reason.endswith(f"SWARMDECK_HEAVY=commit {caged}"), reason
    declared = run_hook("pre-tool-use", _payload(
        {"hook_event_name": "PreToolUse", "tool_name": "Bash",
         "tool_input": {"command": f"SWARMDECK_HEAVY=commit {caged}"}}, isolated_home))
    assert _decision(declared.answer)[0] == "", declared.stdout
