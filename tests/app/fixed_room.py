"""A control room on fixed probe data, for pictures that do not change between runs: one big
host, jobs that ended in each way and one queued, two GPU cards from the scripted NVML
stand-in, a session with subagents, a lock and an alert. Times are set relative to when the
room is built, coarse enough (minutes, days) that the picture is the same a moment later."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

from nvml_standin import GIB, ScriptedCard, ScriptedNvml
from swarmdeck.app.main import SwarmdeckApp
from swarmdeck.config import load_config
from swarmdeck.probes.claude.sessions import SessionInfo
from swarmdeck.probes.claude.subagents import SubagentInfo
from swarmdeck.probes.claude.swarm_health import swarm_health
from swarmdeck.probes.gpu import gpu_snapshot
from swarmdeck.probes.host import HostSnapshot
from swarmdeck.probes.ledger import LedgerJob, MemoryBook
from swarmdeck.probes.locks import STALE, LockHolder, LockState
from swarmdeck.probes.nvml import Nvml
from swarmdeck.probes.records import Alert
from swarmdeck.snapshot import Snapshot
from swarmdeck.state import StateStore

MIB = 1 << 20
HOST = "gpu-box-1"
FIGURES = {
    "name": HOST, "local": True, "taken_at": 0.0, "cores": 64, "busy_fraction": None,
    "busy_cores": None, "load1": 41.5, "load5": 38.25, "load15": 30.0, "heavy_threads": 56,
    "threads_declared": 24, "threads_free": 32, "mem_total": 512 * GIB,
    "mem_available": 300 * GIB, "mem_used": 212 * GIB, "reserve": 32 * GIB,
    "slice_cap": 480 * GIB, "slice_backend": "cgroup-v2", "slice_path": "/sys/fs/cgroup/swarmdeck",
    "slice_placement": "delegated", "slice_problem": "", "slice_used": 150 * GIB,
    "not_yet_grown": 40 * GIB, "room": 290 * GIB, "machine_room": 250 * GIB,
    "used_outside_slice": 62 * GIB,
}


def job(job_id: int, label: str, state: str, now: float, **extra: object) -> LedgerJob:
    values: dict[str, object] = {
        "id": job_id, "label": label, "host": HOST, "state": state,
        "argv": label.split(), "cwd": "/", "booked": 8 * GIB, "cap": 16 * GIB,
        "current": None, "peak": 6 * GIB, "kernel_peak": None, "admitted_via": "history",
        "oom_score_adj": 500, "created_at": now - 7200, "admitted_at": now - 7200,
        "started_at": now - 7200, "ended_at": now - 7200 + 754, "exit_code": 0,
        "outcome": "ok", "hit_ceiling": False, "cgroup": f"/sys/fs/cgroup/swarmdeck/job-{job_id}",
        "output_path": None, "detached": True, "runner_alive": None, "threads": 8,
    }
    values.update(extra)
    return LedgerJob(**values)  # type: ignore[arg-type]


def jobs(now: float) -> list[LedgerJob]:
    return [
        job(1, "make -j16 all", "done", now, exit_code=250, outcome="own cap", peak=16 * GIB,
            hit_ceiling=True),
        job(2, "pytest -x tests", "done", now, exit_code=253, outcome="timed out"),
        job(3, "train --big", "refused", now, exit_code=252, outcome="waited past --wait",
            started_at=None, ended_at=None, admitted_via="cap", booked=600 * GIB),
        job(4, "cargo build", "done", now),
        job(5, "npm test", "done", now, exit_code=7, outcome="exit 7"),
        job(6, "make docs", "queued", now, started_at=None, ended_at=None, admitted_at=None,
            exit_code=None, outcome=None, peak=None, admitted_via=None, oom_score_adj=None),
    ]


def sessions(now: float) -> list[SessionInfo]:
    start = now - 3600 + 30

    def sub(n: int, description: str, kind: str, began: int, took: int) -> SubagentInfo:
        return SubagentInfo(
            id=f"a{n}", tool_use_id=f"toolu_{n}", description=description, type=kind,
            status="completed", background=False, started_at=start + began,
            ended_at=start + began + took, last_activity_at=start + began + took,
            tool_calls=12 + n, tokens=40000 + 1000 * n, parent_id=None, tool_in_flight=None,
            transcript_path=None, prompt_bytes=2048, result_bytes=4096,
        )

    subagents = [
        sub(1, "Survey the web module", "Explore", 0, 600),
        sub(2, "Review the diff", "code-reviewer", 60, 900),
        sub(3, "Write the docs", "general-purpose", 120, 1200),
    ]
    return [
        SessionInfo(
            session_id="abcd7777-0000-4000-8000-000000000015", cwd="/work/proj",
            git_branch="feat/agents", title="fan out the review", live=True, pid=4242,
            process_started_at=start, state="waiting", transcript_path="/dev/null",
            version="2.1.173", started_at=start, last_activity_at=now - 90,
            tool_in_flight=None, subagents=subagents,
            health=swarm_health(subagents, 90000, now),
            waiting_for="permission to run git push", waiting_since=now - 270,
        )
    ]


def fixed_snapshot() -> Snapshot:
    now = time.time()
    host = HostSnapshot.from_json(FIGURES)
    book = MemoryBook.from_host_fields(host, FIGURES)
    assert book is not None
    cards = [ScriptedCard(used=20 * GIB), ScriptedCard(name="NVIDIA A10", total=24 * GIB, used=0)]
    holder = LockHolder("/work/proj", 4242, 1, "abcd7777", "make -j16 all", now - 7 * 60 - 5)
    return Snapshot(
        taken_at=now,
        hosts=[host],
        books=[book],
        jobs=jobs(now),
        gpus=gpu_snapshot([], nvml=Nvml(ScriptedNvml(cards))),
        sessions=sessions(now),
        locks=[LockState(Path("/state/locks/proj.lock"), STALE, holder, "holder 4242 is gone")],
        alerts=[Alert(1, "slice", "warning", "ledger", HOST, "slice 80 % booked", now - 3 * 86400,
                      now - 3 * 86400 - 100, 4, None)],
    )


def fixed_app(home: Path) -> SwarmdeckApp:
    """The app on the fixed room, refreshing once an hour so the picture holds still."""
    (home / "config.toml").write_text("[ui]\nrefresh_interval = 3600\n")
    room = fixed_snapshot()
    return SwarmdeckApp(
        load_config(), StateStore.open_default(),
        prober=lambda: dataclasses.replace(room, taken_at=room.taken_at),
    )
