"""The handback guard through real `swarmdeck hook subagent-stop` processes: it names only
folders the subagent made (never the project's own, never a path git tracks), tells the agent it
may keep one with `not deleted: PATH`, and never blocks twice in a row (stop_hook_active)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from claude_lines import hook_payload

SID = "cccc3333-0000-4000-8000-000000000131"
STRICT = '[guards]\npreset = "strict"\n'


def _transcript(folder: Path, *commands: str) -> Path:
    path = folder / "agent-a-copy.jsonl"
    lines = []
    for number, command in enumerate(commands):
        lines.append(json.dumps({
            "type": "assistant", "isSidechain": True, "agentId": "a-copy",
            "message": {"role": "assistant", "content": [
                {"type": "tool_use", "id": f"toolu_{number}", "name": "Bash",
                 "input": {"command": command}}]}}))
    path.write_text("\n".join(lines) + "\n")
    return path


def _stop(home: Path, project: Path, transcript: Path, **more: Any) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "agent_id": "a-copy", "agent_type": "reviewer", "last_assistant_message": "Done.",
        "stop_hook_active": False, "agent_transcript_path": str(transcript),
        "cwd": str(project),
    }
    fields.update(more)
    return hook_payload("SubagentStop", session_id=SID, **fields)


def _project(home: Path) -> Path:
    project = home / "proj"
    (project / "src").mkdir(parents=True)
    (project / "tests").mkdir()
    (project / "src" / "a.py").write_text("x = 1\n")
    (project / "tests" / "test_a.py").write_text("def test(): pass\n")
    (project / "README.md").write_text("readme\n")
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    subprocess.run(["git", "-C", str(project), "add", "."], check=True)
    return project


def test_copies_into_the_projects_own_folders_are_not_blamed(
    run_hook, isolated_home: Path
) -> None:
    (isolated_home / "config.toml").write_text(STRICT)
    project = _project(isolated_home)
    (project / "fixtures").mkdir()
    transcript = _transcript(isolated_home, "cp -r fixtures tests/", "cp -a README.md src",
                             "cp -r /tmp/x src/vendored")
    done = run_hook("subagent-stop", _stop(isolated_home, project, transcript))
    assert done.returncode == 0, done.stderr
    assert done.answer is None, done.stdout


def test_a_scratch_copy_is_named_and_may_be_kept_with_a_line(
    run_hook, isolated_home: Path
) -> None:
    (isolated_home / "config.toml").write_text(STRICT)
    project = _project(isolated_home)
    subprocess.run(["cp", "-r", "src", "src-copy"], cwd=project, check=True)
    transcript = _transcript(isolated_home, "cp -r src src-copy")
    done = run_hook("subagent-stop", _stop(isolated_home, project, transcript))
    answer = done.answer or {}
    assert answer.get("decision") == "block", done.stdout
    assert str(project / "src-copy") in answer["reason"]
    assert "delete them, or say `not deleted: PATH` in your report" in answer["reason"]
    assert "before handing back" not in answer["reason"]


def test_a_second_stop_after_a_block_is_let_through(run_hook, isolated_home: Path) -> None:
    (isolated_home / "config.toml").write_text(STRICT)
    project = _project(isolated_home)
    subprocess.run(["cp", "-r", "src", "src-copy"], cwd=project, check=True)
    transcript = _transcript(isolated_home, "cp -r src src-copy")
    again = _stop(isolated_home, project, transcript, stop_hook_active=True)
    done = run_hook("subagent-stop", again)
    assert done.returncode == 0, done.stderr
    assert done.answer is None, done.stdout
