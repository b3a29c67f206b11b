"""A scene for the watchdog's tests: real transcripts, pid files naming real processes, ledger
rows whose job is a real process this test started, hook events in a real state file."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from claude_lines import ClaudeTree
from swarmdeck.config import Config, load_config
from swarmdeck.probes.host import local_host_name
from swarmdeck.probes.procs import identity, own_identity, read_stat
from swarmdeck.state import StateStore

SID = "7777aaaa-0000-4000-8000-000000000001"
SWARMDECK = str(Path(sys.executable).with_name("swarmdeck"))


def write_watchdog_config(home: Path, **keys: Any) -> Config:
    """This test's config with `[watchdog]` keys set (tiny thresholds), loaded; the `[memory]`
    table of a slice of the test's own (the `own_slice` fixture) is kept."""
    config = home / "config.toml"
    kept = config.read_text() if config.exists() else ""
    lines = [kept] if kept.startswith("[memory]") and "[watchdog]" not in kept else []
    lines.append("[watchdog]")
    for key, value in keys.items():
        lines.append(f"{key} = {json.dumps(value)}")
    config.write_text("\n".join(lines) + "\n")
    return load_config()


@pytest.fixture
def store(isolated_home: Path) -> StateStore:
    return StateStore.open_default()


@pytest.fixture
def tree(isolated_home: Path) -> ClaudeTree:
    return ClaudeTree(isolated_home / "claude")


@pytest.fixture
def processes() -> Iterator[Callable[..., subprocess.Popen[str]]]:
    """Start real processes, each in a session of its own; after the test every process of
    those sessions (children included) is killed, and each started one reaped."""
    started: list[subprocess.Popen[str]] = []

    def start(*argv: str, **kwargs: Any) -> subprocess.Popen[str]:
        proc = subprocess.Popen(list(argv), text=True, start_new_session=True, **kwargs)
        started.append(proc)
        return proc

    yield start
    for proc in started:
        end_session(proc.pid)
        proc.wait()


def end_session(sid: int) -> None:
    """Kill every live process of session `sid` (a test's process and what it started)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        stat = read_stat(int(entry.name))
        if stat is not None and stat.session == sid and stat.state != "Z":
            with contextlib.suppress(ProcessLookupError):
                os.kill(stat.pid, signal.SIGKILL)


@pytest.fixture
def live_session(tree: ClaudeTree, processes) -> subprocess.Popen[str]:
    """A real process standing for the session's Claude Code, named by SID's pid file."""
    proc = processes("sleep", "300")
    me = identity(proc.pid)
    assert me is not None
    tree.write_pid_file(proc.pid, SID, procStart=str(me.start_ticks))
    return proc


def insert_job(store: StateStore, pid: int, **columns: Any) -> int:
    """A running ledger row for the real process `pid`; this test process is its runner."""
    me = own_identity()
    job = identity(pid)
    assert job is not None
    row = {
        "label": "job", "host": local_host_name(), "argv": json.dumps(["sleep", "300"]),
        "cwd": os.getcwd(), "state": "running", "pid": pid, "start_ticks": job.start_ticks,
        "runner_pid": me.pid, "runner_start_ticks": me.start_ticks, "booked": 1 << 20,
        "cap": 1 << 30, "started_at": columns.pop("started_at", None),
    }
    row.update(columns)
    names = ", ".join(row)
    marks = ", ".join("?" * len(row))
    with store.transaction() as conn:
        return int(
            conn.execute(f"INSERT INTO jobs ({names}) VALUES ({marks})", list(row.values()))
            .lastrowid
        )


def caged_job(store: StateStore, slice_path: Path, pid: int, **columns: Any) -> int:
    """`insert_job`, its process moved into the cage its runner (this test process) would have
    made for it in the test's own slice: only such a row's process is supervised."""
    from swarmdeck.actions.cage.base import cage_name

    job_id = insert_job(store, pid, **columns)
    cage = slice_path / cage_name(job_id, os.getpid())
    cage.mkdir()
    (cage / "cgroup.procs").write_text(str(pid))
    with store.transaction() as conn:
        conn.execute("UPDATE jobs SET cgroup = ? WHERE id = ?", (str(cage), job_id))
    return job_id


def insert_hook_event(
    store: StateStore, event: str, at: float, session_id: str = SID,
    agent_id: str | None = None, tool_name: str | None = None, cwd: str | None = None,
    **payload: Any,
) -> None:
    with store.transaction() as conn:
        conn.execute(
            "INSERT INTO hook_events (event, session_id, agent_id, tool_name, cwd, payload,"
            " received_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (event, session_id, agent_id, tool_name, cwd,
             json.dumps({"hook_event_name": event, **payload}), at),
        )
