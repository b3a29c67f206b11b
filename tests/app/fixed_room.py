"""A control room on fixed probe data, for pictures that do not change between runs: one big
host, jobs that ended in each way, one running and one queued, two GPU cards from the scripted
NVML stand-in, a session with subagents, a lock and an alert; the running job's workload has
recorded peaks, and the app has seen twelve earlier readings of the host and the running job
(its history, as if it had run for a while). Times are set relative to when the room is built,
coarse enough (minutes, days) that the picture is the same a moment later. Launching from it
starts in LAUNCH_CWD, whatever folder the checkout is in.

Watched (`fixed_app(home, watched=True)`), the room also has what the watchdog's keys and the
migrate pane act on: two open findings in its state file (the running job holds more resident
memory than the line; the queued job would fit on the peer), a pending kill request for the
first, whose approve modal lists TREE (the processes it would stop, fixed, not this machine's),
and the peer PEER: a [[hosts]] entry with a fresh cached reading and no toolchain commands, so its
card and the migrate pane show its figures and nothing ever connects to it."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

from nvml_standin import GIB, ScriptedCard, ScriptedNvml
from swarmdeck.app.main import SwarmdeckApp
from swarmdeck.app.watchdog import WatchdogPanel
from swarmdeck.config import load_config
from swarmdeck.probes.claude.sessions import SessionInfo
from swarmdeck.probes.claude.subagents import SubagentInfo
from swarmdeck.probes.claude.swarm_health import swarm_health
from swarmdeck.probes.claude.usage import SessionFigures
from swarmdeck.probes.gpu import gpu_snapshot
from swarmdeck.probes.host import HostSnapshot
from swarmdeck.probes.locks import STALE, LockHolder, LockState
from swarmdeck.probes.memory_book import LedgerJob, MemoryBook
from swarmdeck.probes.nvml import Nvml
from swarmdeck.probes.peer_cache import PeerReading, reading_of, write_reading
from swarmdeck.probes.store_rows import Alert, KillRequest, open_findings, pending_kill_requests
from swarmdeck.probes.usage import Usage
from swarmdeck.snapshot import Snapshot
from swarmdeck.state import StateStore
from swarmdeck.watchdog.kills import TreeMember

MIB = 1 << 20
HOST = "gpu-box-1"
LAUNCH_CWD = Path("/")
"""The folder the launch modal starts in: one every machine has."""
WORKLOAD = "fixed-room-pytest-workload"
"""The running job's fingerprint; its recorded peaks are written to the room's state file."""
SESSION = "abcd7777-0000-4000-8000-000000000015"
PEER = "gpu-box-2"
USER = "dev"
"""Who asked for the kill and whom the process runs as: not whoever runs the tests."""
TREE = [
    TreeMember(4343, "pytest", "pytest -n 8 tests"),
    TreeMember(4351, "python3", "python3 -c from xdist.remote import main; main() gw0"),
    TreeMember(4352, "python3", "python3 -c from xdist.remote import main; main() gw1"),
    TreeMember(4360, "ld", "ld -o build/libfast.so build/fast.o"),
]
"""The running job's processes, as the approve modal lists them."""
CONFIG = """\
[ui]
refresh_interval = 3600
"""
PEER_CONFIG = f"""
[[hosts]]
name = "{PEER}"
address = "127.0.0.1"
toolchains = []
"""
FIGURES = {
    "name": HOST, "local": True, "taken_at": 0.0, "cores": 64, "busy_fraction": 0.6,
    "busy_cores": 38.4, "load1": 41.5, "load5": 38.25, "load15": 30.0, "heavy_threads": 56,
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
        running_job(now, USAGE[-1]),
    ]


USAGE = ((2.0, 3.0), (4.5, 6.0), (6.0, 8.0), (7.5, 8.0), (7.8, 8.0), (7.9, 8.0), (6.5, 7.0),
         (3.0, 4.0), (2.0, 2.0), (5.5, 7.0), (6.8, 8.0), (6.2, 7.0))
"""The running job's (cores in use, threads at once) at each of the app's readings."""
BOOK = ((0.2, 60, 100), (0.35, 80, 90), (0.5, 100, 80), (0.7, 120, 60), (0.9, 150, 40),
        (0.95, 170, 30), (0.8, 160, 35), (0.6, 150, 40), (0.55, 140, 45), (0.6, 145, 40),
        (0.65, 150, 40), (0.6, 150, 40))
"""The host at each reading: (busy fraction, slice used GiB, booked-not-yet-grown GiB); the
last is FIGURES."""
PEAKS = (5.0, 5.5, 5.2, 6.0, 11.5, 6.1, 6.3, 12.0)
"""The running job's workload: its recorded peaks (GiB), oldest first; two hit the cap."""


def running_job(now: float, usage: tuple[float, float]) -> LedgerJob:
    cores, threads = usage
    return job(7, "pytest -n 8 tests", "running", now, argv=["pytest", "-n", "8", "tests"],
               cwd="/work/proj", booked=10 * GIB, cap=12 * GIB, current=5 * GIB,
               peak=int(5.5 * GIB), started_at=now - 2 * 3600 - 30, ended_at=None, exit_code=None,
               outcome=None, pid=4343, start_ticks=1, fingerprint=WORKLOAD, session_id=SESSION,
               agent_id="a2", usage=Usage(cores, threads, 9, 2.0, True))


def host_at(taken_at: float, busy: float, slice_used: int, not_yet_grown: int) -> dict:
    """FIGURES at another reading: the same machine, its book's parts moved."""
    available = 512 * GIB - 62 * GIB - slice_used
    return {
        **FIGURES, "taken_at": taken_at, "busy_fraction": busy, "busy_cores": busy * 64,
        "mem_available": available, "mem_used": 512 * GIB - available,
        "slice_used": slice_used, "not_yet_grown": not_yet_grown,
        "room": 480 * GIB - slice_used - not_yet_grown,
        "machine_room": available - not_yet_grown - 10 * GIB,
    }


def history_scenes(now: float) -> list[Snapshot]:
    """The readings the app saw before the room's own, a minute apart, oldest first."""
    scenes = []
    for n, ((busy, used, growing), usage) in enumerate(zip(BOOK[:-1], USAGE[:-1], strict=True)):
        taken_at = now - (len(BOOK) - 1 - n) * 60
        figures = host_at(taken_at, busy, used * GIB, growing * GIB)
        host = HostSnapshot.from_json(figures)
        book = MemoryBook.from_host_fields(host, figures)
        assert book is not None
        scenes.append(Snapshot(taken_at=taken_at, hosts=[host], books=[book],
                               jobs=[running_job(now, usage)]))
    return scenes


def record_peaks(store: StateStore) -> None:
    """The running job's workload's earlier runs, in the room's state file."""
    with store.transaction() as conn:
        for n, peak in enumerate(PEAKS):
            conn.execute(
                "INSERT INTO peaks (fingerprint, job_id, peak, hit_ceiling, cap, duration,"
                " outcome, recorded_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (WORKLOAD, 100 + n, int(peak * GIB), int(peak >= 11.5), 12 * GIB, 700.0,
                 "own cap" if peak >= 11.5 else "ok", 1_000_000.0 + n * 3600),
            )


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
            session_id=SESSION, cwd="/work/proj",
            git_branch="feat/agents", title="fan out the review", live=True, pid=4242,
            process_started_at=start, state="waiting", transcript_path="/dev/null",
            version="2.1.173", started_at=start, last_activity_at=now - 90,
            tool_in_flight=None, subagents=subagents,
            health=swarm_health(subagents, 90000, now),
            waiting_for="permission to run git push", waiting_since=now - 270,
            # Opus 4.6 at list prices: 18.4k in, 9.2k out, 1.25M cache read, 86k cache write.
            figures=SessionFigures(18_400, 9_200, 1_250_000, 86_000, 1.4845, 90_000, 200_000,
                                   "claude-opus-4-6", now - 95),
        )
    ]


def peer_reading(now: float) -> PeerReading:
    """The peer as it last answered, a few seconds ago: a smaller machine with room to spare."""
    figures = {
        **host_at(now - 5, 0.25, 40 * GIB, 0), "name": PEER, "local": False, "cores": 32,
        "busy_cores": 8.0, "load1": 8.1, "load5": 7.95, "load15": 6.0, "heavy_threads": 28,
        "threads_declared": 4, "threads_free": 24, "mem_total": 256 * GIB,
        "mem_available": 200 * GIB, "mem_used": 56 * GIB, "reserve": 16 * GIB,
        "slice_cap": 240 * GIB, "room": 192 * GIB,
        "machine_room": 184 * GIB, "used_outside_slice": 16 * GIB, "gpu_count": 2,
    }
    return reading_of(PEER, figures, now - 5)


def record_watchdog(store: StateStore, now: float) -> None:
    """Two open findings and the kill request asked for the first, in the room's state file."""
    with store.transaction() as conn:
        for key, rule, subject, severity, message, advice, job_id, pid, since, count in (
            ("resident_over_line:4343:1", "resident_over_line", "job #7: pid 4343 pytest",
             "warning", "holds 11.5G resident (line 8G)",
             "look whether it leaks; request a kill if it runs away", 7, 4343, 9 * 60, 9),
            (f"queued_while_peer_fits:job6:{PEER}", "queued_while_peer_fits", "job #6 make docs",
             "info", f"queued here for 8G while {PEER} has 192G free",
             f"`swarmdeck peer run {PEER} -- make docs`", 6, None, 25 * 60, 25),
        ):
            conn.execute(
                "INSERT INTO findings (key, rule, subject, severity, message, first_seen_at,"
                " last_seen_at, count, host, session_id, job_id, pid, start_ticks, advice,"
                " fired_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (key, rule, subject, severity, message, now - since - 60, now - 30, count, HOST,
                 SESSION, job_id, pid, 1 if pid else None, advice, now - since),
            )
        conn.execute(
            "INSERT INTO kill_requests (job_id, host, pid, start_ticks, user, command, reason,"
            " finding_key, state, requested_at, requested_by)"
            " VALUES (7, ?, 4343, 1, ?, 'pytest -n 8 tests', ?, 'resident_over_line:4343:1',"
            " 'pending', ?, ?)",
            (HOST, USER, "resident_over_line: holds 11.5G resident (line 8G)", now - 4 * 60, USER),
        )


def fixed_tree(store: StateStore, request: KillRequest) -> list[TreeMember]:
    return list(TREE)


def fixed_snapshot(store: StateStore, *, watched: bool = False) -> Snapshot:
    now = time.time()
    peers = []
    if watched:
        record_watchdog(store, now)
        peers.append(peer_reading(now))
        write_reading(peers[0])
    host = HostSnapshot.from_json({**FIGURES, "taken_at": now})
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
        findings=open_findings(store),
        kill_requests=pending_kill_requests(store),
        peers=peers,
    )


def fixed_app(home: Path, *, watched: bool = False, readonly: bool = False) -> SwarmdeckApp:
    """The app on the fixed room, refreshing once an hour so the picture holds still; watched,
    with the findings, the kill request and the peer too; read-only, as `ui --readonly`."""
    (home / "config.toml").write_text(CONFIG + (PEER_CONFIG if watched else ""))
    store = StateStore.open_default()
    room = fixed_snapshot(store, watched=watched)
    record_peaks(store)
    app = SwarmdeckApp(
        load_config(), store,
        prober=lambda: dataclasses.replace(room, taken_at=room.taken_at),
        launch_cwd=LAUNCH_CWD,
        readonly=readonly,
    )
    for scene in history_scenes(room.taken_at):
        app.history.observe(scene)
    return app


def fix_trees(app: SwarmdeckApp) -> None:
    """Once the room is mounted: the approve modal lists TREE, not this machine's processes."""
    app.query_one(WatchdogPanel).tree_lister = fixed_tree
