"""What a person does in the demo works on it, in the README's order: the queued job moves to the
loopback peer as the migrate pane moves it, the watchdog raises its first finding within 60 s
of the scene starting, and a kill it leads to is requested and approved (the job's tree is
gone, its row closed); stopping the scene then leaves nothing of any of it, on either host."""

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

from swarmdeck.actions.migration import launch, migration_options
from swarmdeck.config import load_config
from swarmdeck.demo.scene_record import SCENE_VARIABLE, read_owner
from swarmdeck.probes.cgroups import read_hierarchies
from swarmdeck.probes.memory_book import ledger_jobs
from swarmdeck.state import StateStore

SWARMDECK = str(Path(sys.executable).parent / "swarmdeck")
FIRST_FINDING_WITHIN = 60.0


def _swarmdeck(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "SWARMDECK_STATE_DIR": str(root / "state"),
        "SWARMDECK_CONFIG": str(root / "config.toml"),
        "CLAUDE_CONFIG_DIR": str(root / "claude"),
    }
    return subprocess.run(
        [SWARMDECK, *args], env=env, capture_output=True, text=True, timeout=60, check=False
    )


def _snapshot(root: Path) -> dict[str, Any]:
    done = _swarmdeck(root, "status", "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _migrate_the_queued_job(root: Path, monkeypatch: pytest.MonkeyPatch) -> int:
    """Launch the queued job on the peer the way the migrate pane does; its pid there. The
    pane runs inside the scene, so what it launches carries the scene's token
    (demo/scene_record.py): the scene's to stop when it ends."""
    owner = read_owner(root)
    assert owner is not None
    monkeypatch.setenv(SCENE_VARIABLE, owner.token)
    monkeypatch.setenv("SWARMDECK_STATE_DIR", str(root / "state"))
    monkeypatch.setenv("SWARMDECK_CONFIG", str(root / "config.toml"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(root / "claude"))
    queued = [job for job in _snapshot(root)["jobs"] if job["state"] == "queued"]
    assert queued
    store = StateStore.open_default()
    try:
        job = next(j for j in ledger_jobs(store) if j.id == queued[0]["id"])
        options = migration_options(load_config(), job)
        assert [option.host for option in options] == ["loopback"]
        launched = launch(options[0], store)
    finally:
        store.close()
    assert launched.code == 0, launched.line
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        there = [
            j for j in _snapshot(root)["jobs"]
            if j["host"] == "loopback" and j["state"] == "running" and j["pid"]
        ]
        if there:
            return there[0]["pid"]
        time.sleep(0.5)
    raise AssertionError("the migrated job never ran on the peer")


def test_a_move_to_the_peer_a_finding_within_a_minute_and_an_approved_kill(
    demo_slice: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    command = [SWARMDECK, "demo", "--no-ui", "--seconds", "300", "--step", "0.5"]
    started = time.monotonic()
    demo = subprocess.Popen(
        command + (["--slice", demo_slice] if demo_slice else []),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert demo.stdout is not None
        line = demo.stdout.readline()
        while line.startswith("swarmdeck demo: "):
            line = demo.stdout.readline()
        match = re.search(r"demo scene in (\S+):", line)
        assert match, line
        root = Path(match.group(1))
        moved = _migrate_the_queued_job(root, monkeypatch)
        findings: list[dict[str, Any]] = []
        while not findings and time.monotonic() - started < FIRST_FINDING_WITHIN:
            findings = _snapshot(root)["findings"]
            time.sleep(0.5)
        assert findings, f"no finding within {FIRST_FINDING_WITHIN:.0f} s"
        deadline = time.monotonic() + 90
        idle: list[dict[str, Any]] = []
        while not idle and time.monotonic() < deadline:
            idle = [f for f in _snapshot(root)["findings"] if f["rule"] == "threads_underused"]
            time.sleep(0.5)
        assert idle, "the idle job's thread use was never found"
        target = idle[0]
        assert target["pid"] and _alive(target["pid"])
        asked = _swarmdeck(root, "kills", "--request", str(target["id"]))
        assert asked.returncode == 0, asked.stderr
        request = re.search(r"kill request (\d+)", asked.stdout)
        assert request, asked.stdout
        approved = _swarmdeck(root, "approve", request.group(1))
        assert approved.returncode == 0, approved.stderr
        deadline = time.monotonic() + 30
        while _alive(target["pid"]) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive(target["pid"])
        jobs = {job["id"]: job for job in _snapshot(root)["jobs"]}
        assert jobs[target["job_id"]]["state"] != "running"
        assert _alive(moved)
        demo.send_signal(signal.SIGTERM)
        assert demo.wait(timeout=60) == 0
    finally:
        ended(demo)
    assert not _alive(moved)
    assert processes_mentioning(str(root)) == []
    if demo_slice is not None:
        mount = read_hierarchies().v1_memory
        assert mount is not None
        hierarchy = Path(mount)
        assert not (hierarchy / demo_slice).exists()
        assert not (hierarchy / f"{demo_slice}-peer").exists()
    assert not root.exists()
