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
