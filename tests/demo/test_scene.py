"""`swarmdeck demo --no-ui`: the real probes see the scene's sessions, jobs and peer, and when it
stops no process, cgroup or file of it is left."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from leftovers import ended, processes_mentioning

from swarmdeck.probes.cgroups import chosen_site, read_hierarchies, slice_sites

SWARMDECK = str(Path(sys.executable).parent / "swarmdeck")
SUMMARY = re.compile(r"demo scene in (\S+): .*\((caged in (\S+)|uncaged)\)")


def _status(root: Path) -> dict[str, Any]:
    env = {
        **os.environ,
        "SWARMDECK_STATE_DIR": str(root / "state"),
        "SWARMDECK_CONFIG": str(root / "config.toml"),
        "CLAUDE_CONFIG_DIR": str(root / "claude"),
    }
    out = subprocess.run(
        [SWARMDECK, "status", "--json"], env=env, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def _scene_seen(snapshot: dict[str, Any], caged: bool) -> list[str]:
    """What the snapshot does not show yet of the scene; empty when all of it is there."""
    missing = []
    sessions = snapshot["sessions"]
    if len([s for s in sessions if s["live"]]) < 3:
        missing.append("three live sessions")
    if not any(s["state"] == "waiting" for s in sessions):
        missing.append("a session waiting for the person")
    statuses = {a["status"] for s in sessions for a in s["subagents"]}
    if not {"running", "completed"} <= statuses:
        missing.append(f"subagents running and completed (seen {sorted(statuses)})")
    jobs = snapshot["jobs"]
    grown = 250 if caged else 1
    if not any(j["exit_code"] == grown for j in jobs):
        missing.append(f"the job that grows ended with {grown}")
    if not any(j["state"] == "queued" for j in jobs):
        missing.append("a queued job")
    if len([j for j in jobs if j["state"] == "running"]) < 3:
        missing.append("three running jobs")
    if len(jobs) != 5 or any(j["label"].endswith("(uncaged)") == caged for j in jobs):
        missing.append(f"five jobs, {'none' if caged else 'each'} marked uncaged")
    peers = [h for h in snapshot["hosts"] if h.get("local") is False]
    if not any(p["name"] == "loopback" and p["state"] == "read" for p in peers):
        missing.append(f"the loopback peer read ({peers})")
    return missing


def slice_site_for_tests():
    """The cage site a scene of this test run would use (None: it runs uncaged)."""
    return chosen_site(slice_sites(f"swarmdeck-test-{os.getpid()}-probe"))


@pytest.mark.parametrize("uncaged", [False, True], ids=["caged", "uncaged"])
def test_the_scene_is_seen_by_the_probes_and_leaves_nothing_behind(
    demo_slice: str | None, uncaged: bool, isolated_home: Path
) -> None:
    command = [SWARMDECK, "demo", "--no-ui", "--seconds", "300", "--step", "0.5"]
    command += ["--slice", demo_slice] if demo_slice else []
    demo = subprocess.Popen(
        command + (["--uncaged"] if uncaged else []),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert demo.stdout is not None
        said = [demo.stdout.readline()]
        if said[0].startswith("swarmdeck demo: "):
            assert "uncaged" in said[0], said
            said.append(demo.stdout.readline())
        assert (len(said) == 2) == (uncaged or slice_site_for_tests() is None), said
        match = SUMMARY.search(said[-1])
        assert match, (said, demo.stderr.read() if demo.poll() is not None else "")
        root = Path(match.group(1))
        slice_path = Path(match.group(3)) if match.group(3) else None
        assert root.is_dir()
        assert processes_mentioning(str(root))
        deadline = time.monotonic() + 90
        missing = ["the first snapshot"]
        while missing and time.monotonic() < deadline:
            missing = _scene_seen(_status(root), caged=slice_path is not None)
            time.sleep(0.5)
        assert not missing, missing
        if slice_path is not None:
            assert slice_path.is_dir()
        demo.send_signal(signal.SIGTERM)
        assert demo.wait(timeout=60) == 0
    finally:
        ended(demo)
    assert processes_mentioning(str(root)) == []
    if demo_slice is not None:
        assert not Path(read_hierarchies().v1_memory or "/nonexistent", demo_slice).exists()
    assert not root.exists()
    # The owner records of the scene's slices go with them.
    assert not list((isolated_home / "run" / "slices").glob("*.json"))


def test_a_hangup_ends_the_scene_with_129_and_leaves_nothing_behind() -> None:
    """Without the control room, the scene says how to look at it from another shell; SIGHUP
    (the terminal it was started from went away) ends it as a quit would, with the shell's
    code for it."""
    demo = subprocess.Popen(
        [SWARMDECK, "demo", "--no-ui", "--uncaged", "--seconds", "300", "--step", "0.5"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert demo.stdout is not None and demo.stderr is not None
        said = [demo.stdout.readline(), demo.stdout.readline()]
        match = SUMMARY.search(said[-1])
        assert match, said
        root = Path(match.group(1))
        hint = demo.stdout.readline()
        assert hint.startswith("look at it from another shell: "), hint
        looked = subprocess.run(
            hint.split(": ", 1)[1], shell=True, capture_output=True, text=True, timeout=60,
            env={**os.environ, "PATH": f"{Path(SWARMDECK).parent}:{os.environ['PATH']}"},
        )
        assert looked.returncode == 0 and "loopback" in looked.stdout, looked.stderr
        demo.send_signal(signal.SIGHUP)
        assert demo.wait(timeout=60) == 129
        assert "Traceback" not in demo.stderr.read()
    finally:
        ended(demo)
    assert processes_mentioning(str(root)) == []
    assert not root.exists()
