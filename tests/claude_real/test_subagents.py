"""A subagent of the real CLI, seen running and then completed."""

from __future__ import annotations

import subprocess

from claude_rig import Rig, wait_for


def test_background_subagent_running_then_completed(rig: Rig) -> None:
    release = rig.root / "release"
    rig.script(
        {"match": "map the code", "reply": [{
            "type": "tool_use", "id": "toolu_agent1", "name": "Agent",
            "input": {"description": "Survey the code", "subagent_type": "general-purpose",
                      "prompt": "SURVEY-TASK: list the files"}}]},
        {"match": "SURVEY-TASK", "reply": [{
            "type": "tool_use", "id": "toolu_wait1", "name": "Bash",
            "input": {"command": f"while [ ! -e {release} ]; do sleep 0.1; done; ls",
                      "description": "wait"}}]},
    )
    run = subprocess.Popen(rig.command("-p", "map the code", "--dangerously-skip-permissions"),
                           cwd=rig.project, env=rig.env(), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    try:
        def running() -> dict | None:
            for session in rig.sessions():
                for sub in session["subagents"]:
                    if sub["status"] == "running":
                        return sub
            return None

        sub = wait_for(running, 60, "a running subagent in status --json")
        assert sub["description"] == "Survey the code"
        release.touch()
        _out, err = run.communicate(timeout=90)
    finally:
        release.touch()
        if run.poll() is None:
            run.kill()
            run.wait()
    assert run.returncode == 0, err
    [session] = rig.sessions()
    assert [s["status"] for s in session["subagents"]] == ["completed"]
    # Every request was one turn of the main thread or of the subagent, each written in its
    # own transcript: the session's figures count them all, the subagent's included.
    answered = [r for r in rig.requests() if r["reply"]]
    assert session["tokens_out"] == 30 * len(answered)
    assert session["tokens_in"] == 1200 * len(answered)


def test_a_dispatch_over_the_limit_is_denied_and_the_model_reads_why(rig: Rig) -> None:
    (rig.root / "config.toml").write_text("[hooks]\nmax_running_subagents = 1\n")
    release = rig.root / "release"
    rig.script(
        {"match": "fan out", "reply": [{
            "type": "tool_use", "id": "toolu_one", "name": "Agent",
            "input": {"description": "First part", "subagent_type": "general-purpose",
                      "prompt": "TASK-ONE: wait"}}]},
        {"match": "TASK-ONE", "reply": [{
            "type": "tool_use", "id": "toolu_hold", "name": "Bash",
            "input": {"command": f"while [ ! -e {release} ]; do sleep 0.1; done",
                      "description": "wait"}}]},
        {"match": "toolu_one", "reply": [{
            "type": "tool_use", "id": "toolu_two", "name": "Agent",
            "input": {"description": "Second part", "subagent_type": "general-purpose",
                      "prompt": "TASK-TWO: never runs"}}]},
    )
    run = subprocess.Popen(rig.command("-p", "fan out", "--dangerously-skip-permissions"),
                           cwd=rig.project, env=rig.env(), stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    try:
        def denial() -> str | None:
            for request in rig.requests():
                for message in request["body"].get("messages", []):
                    for block in message.get("content") if isinstance(
                            message.get("content"), list) else []:
                        if block.get("tool_use_id") == "toolu_two":
                            return str(block.get("content"))
            return None

        reason = wait_for(denial, 60, "the second dispatch's result")
    finally:
        release.touch()
        run.wait(90)
    assert "hooks.max_running_subagents" in reason and "First part" in reason, reason
    assert not any("TASK-TWO" in str(r["body"].get("messages", [])[:1]) for r in rig.requests())
