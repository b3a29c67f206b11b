"""Compaction in the real CLI: what it lost comes back in the next request."""

from __future__ import annotations

import json
import subprocess

from claude_rig import Rig


def test_after_compaction_the_next_request_has_the_control_rooms_context(rig: Rig) -> None:
    subprocess.run(["git", "init", "-q", str(rig.project)], check=True)
    (rig.project / "half-done.py").write_text("print('work in progress')\n")
    assert rig.print_run("hello").returncode == 0
    compacted = rig.print_run("/compact", "--continue")
    assert compacted.returncode == 0, compacted.stderr
    asked = len(rig.requests())
    assert rig.print_run("go on", "--continue").returncode == 0
    sources = [data.get("source") for event, data in rig.hook_events() if event == "SessionStart"]
    assert "compact" in sources
    after = json.dumps(rig.requests()[asked]["body"]["messages"])
    assert "swarmdeck control room, at session compact" in after
    assert "half-done.py" in after, "the uncommitted work is said again"
