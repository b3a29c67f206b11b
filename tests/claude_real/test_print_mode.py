"""`claude -p` runs of the real CLI with swarmdeck's hooks installed."""

from __future__ import annotations

import json
import subprocess

from claude_rig import Rig, wait_for


def bash(tool_id: str, command: str) -> dict:
    return {"type": "tool_use", "id": tool_id, "name": "Bash",
            "input": {"command": command, "description": "run it"}}


def test_settings_accepted_and_session_start_context_reaches_the_model(rig: Rig) -> None:
    done = rig.print_run("hello there")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Done."
    requests = [r for r in rig.requests() if r["path"].startswith("/v1/messages")]
    assert requests, "the CLI sent nothing to the fake API"
    assert all(r["headers"].get("x-api-key") == "sk-ant-test-swarmdeck-0000" for r in requests)
    first = json.dumps(requests[0]["body"]["messages"])
    assert "swarmdeck control room, at session startup" in first
    events = rig.events()
    assert events[0] == "SessionStart"
    assert "Stop" in events


def test_a_sessions_tokens_cost_and_context_fill(rig: Rig) -> None:
    rig.script({"match": "hello", "reply": [{"type": "text", "text": "Hi."}], "usage": {
        "input_tokens": 1000, "output_tokens": 50, "cache_read_input_tokens": 20000,
        "cache_creation_input_tokens": 3000}})
    assert rig.print_run("hello").returncode == 0
    [request] = rig.requests()
    [session] = rig.sessions()
    model = request["body"]["model"]
    assert session["model"] == model
    assert (session["tokens_in"], session["tokens_out"]) == (1000, 50)
    assert (session["cache_read_tokens"], session["cache_write_tokens"]) == (20000, 3000)
    assert session["context_tokens"] == 24000
    assert session["context_fill"] == round(24000 / session["context_window"], 4)
    assert session["last_answer_at"] is not None
    from swarmdeck.probes.claude.usage import price_of

    price = price_of(model)
    assert price is not None, f"{model} is not in the price table"
    expected = (1000 * price.input + 50 * price.output + 20000 * price.cache_read
                + 3000 * price.cache_write) / 1e6
    assert session["cost_usd"] == round(expected, 6)


def test_reminder_for_a_heavy_command_reaches_the_model(rig: Rig) -> None:
    (rig.project / "Makefile").write_text("test:\n\t@echo all good\n")
    rig.script(
        {"match": "run the tests", "reply": [bash("toolu_heavy1", "make test")]},
    )
    done = rig.print_run("run the tests")
    assert done.returncode == 0, done.stderr
    after = [r for r in rig.requests() if "toolu_heavy1" in json.dumps(r["body"]["messages"])]
    assert after, "no request carried the tool's result"
    tail = json.dumps(after[0]["body"]["messages"][-3:])
    assert "make test" in tail and "swarmdeck run" in tail, tail[:2000]
    events = rig.events()
    assert "PreToolUse" in events and "PostToolUse" in events


def test_failing_heavy_command_is_seen_ending_by_the_watchdog(rig: Rig) -> None:
    (rig.project / "Makefile").write_text("test:\n\t@echo one failed; exit 3\n")
    (rig.root / "config.toml").write_text("[watchdog]\nmin_duration = 0\n")
    rig.script({"match": "run the tests", "reply": [bash("toolu_fail1", "make test")]})
    done = rig.print_run("run the tests")
    assert done.returncode == 0, done.stderr
    ended = [data for event, data in rig.hook_events() if event == "PostToolUseFailure"]
    assert [data.get("tool_use_id") for data in ended] == ["toolu_fail1"]
    assert "PostToolUseFailure" in json.dumps(rig.config_dir.joinpath("settings.json").read_text())
    watch = rig.swarmdeck("watch", "--once", "--json")
    assert watch.returncode == 0, watch.stderr
    fired = [f for line in watch.stdout.splitlines() for f in json.loads(line)["fired"]]
    assert [f["rule"] for f in fired if f["rule"] == "heavy_without_run"] == ["heavy_without_run"]
    assert "make test" in next(f["subject"] for f in fired if f["rule"] == "heavy_without_run")


def test_a_print_run_is_print_mode_and_a_plain_folder_has_no_branch(rig: Rig) -> None:
    release = rig.root / "release"
    rig.script({"match": "wait here", "reply": [bash(
        "toolu_hold1", f"while [ ! -e {release} ]; do sleep 0.1; done")]})
    run = subprocess.Popen(rig.command("-p", "wait here", "--dangerously-skip-permissions"),
                           cwd=rig.project, env=rig.env(), stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    try:
        live = wait_for(lambda: [s for s in rig.sessions() if s["live"]], 60, "a live session")
        entrypoints = [p["entrypoint"] for p in rig.pid_files()]
    finally:
        release.touch()
        run.wait(60)
    assert entrypoints == ["sdk-cli"]
    assert live[0]["mode"] == "print"
    assert live[0]["git_branch"] is None
    assert rig.sessions()[0]["git_branch"] is None
