"""A subagent of the real CLI, seen running and then completed."""

from __future__ import annotations

import json
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
        print(json.dumps(sub, indent=1))
        release.touch()
        out, err = run.communicate(timeout=90)
    finally:
        release.touch()
        if run.poll() is None:
            run.kill()
            run.wait()
    print(out, err)
    print(rig.events())
    session = rig.sessions()[0]
    print(json.dumps(session, indent=1)[:4000])
    assert [s["status"] for s in session["subagents"]] == ["completed"]
