"""What one watchdog pass looks at: the snapshot, plus the few facts the snapshot does not carry.

The rules are pure functions; everything they need from the world is read here, once per pass,
and only for what the control room supervises: the files of running jobs, the processes of those
jobs' cages and of live Claude Code sessions, the recent hook events, and the tail of each live
session's transcript (parsed again only when the file changed).
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from swarmdeck.errors import StateError
from swarmdeck.hook_events import read_hook_events
from swarmdeck.ledger import running_cluster_hosts
from swarmdeck.ledger.schema import RUNNING
from swarmdeck.probes.cgroups import cgroup_pids
from swarmdeck.probes.claude.transcript_fields import text_of, timestamp
from swarmdeck.probes.memory_book import ledger_jobs
from swarmdeck.probes.procs import read_stat

if TYPE_CHECKING:
    from swarmdeck.probes.claude.sessions import SessionInfo
    from swarmdeck.probes.memory_book import LedgerJob
    from swarmdeck.snapshot import Snapshot
    from swarmdeck.state import StateStore

TAIL_BYTES = 64 * 1024
"""How much of the end of a transcript is read, at most, for its latest Bash calls."""
EVENT_WINDOW = 600.0
"""How far back hook events are read for commands run outside the cage."""
PAGE = os.sysconf("SC_PAGE_SIZE")


@dataclass(frozen=True)
class OutputFile:
    """A running job's output file: how big, and when it last grew."""

    size: int
    mtime: float


@dataclass(frozen=True)
class SupervisedProcess:
    """A process the control room may stop: a caged job's, or a live Claude Code session's."""

    pid: int
    start_ticks: int
    comm: str
    rss: int
    job_id: int | None = None
    session_id: str | None = None


@dataclass(frozen=True)
class StopSeen:
    """A session's main thread ended its round: when, and the background tasks it listed."""

    at: float
    background_tasks: int


@dataclass(frozen=True)
class BashRun:
    """One finished Bash call of a transcript: its command and a digest of its output."""

    tool_use_id: str
    command: str
    output_digest: str
    at: float | None


@dataclass(frozen=True)
class HookCommand:
    """A Bash command a session ran, as its PostToolUse (or PostToolUseFailure) hook recorded
    it."""

    session_id: str
    agent_id: str | None
    tool_use_id: str
    command: str
    at: float
    cwd: str | None = None
    """The folder the command ran in (its scripts are read there)."""


@dataclass
class Scene:
    """The snapshot and the facts read beside it for one pass."""

    snapshot: Snapshot
    taken_at: float
    outputs: dict[int, OutputFile] = field(default_factory=dict)
    processes: list[SupervisedProcess] = field(default_factory=list)
    stops: dict[str, StopSeen] = field(default_factory=dict)
    """The latest main-thread event of each session, when it is a Stop."""
    bash_runs: dict[str, list[BashRun]] = field(default_factory=dict)
    """The latest finished Bash calls of each live session's main transcript, oldest first."""
    ran_commands: list[HookCommand] = field(default_factory=list)
    cluster_jobs: list[LedgerJob] = field(default_factory=list)
    """Our jobs running on the Slurm cluster, from the ledger (their output file is followed
    here; their processes run on a node, out of sight)."""

    def running_jobs(self) -> list[LedgerJob]:
        return [job for job in self.snapshot.jobs if job.state == RUNNING]

    def session(self, session_id: str) -> SessionInfo | None:
        return next((s for s in self.snapshot.sessions if s.session_id == session_id), None)


class SceneReader:
    """Reads the facts beside each snapshot; keeps parsed transcript tails between passes.

    `bash_runs` is how many of each session's latest Bash calls are wanted (the repeat rule's
    `watchdog.repeat_max`): a tail is read from its end only until that many are found.
    """

    def __init__(self, bash_runs: int = 3) -> None:
        self.wanted = bash_runs
        self._tails: dict[str, tuple[tuple[int, float], list[BashRun]]] = {}

    def read(self, snapshot: Snapshot, store: StateStore, now: float) -> Scene:
        scene = Scene(snapshot=snapshot, taken_at=now)
        jobs = scene.running_jobs()
        scene.cluster_jobs = running_cluster_jobs(store)
        scene.outputs = output_files(jobs + scene.cluster_jobs)
        scene.processes = supervised_processes(jobs, snapshot.sessions)
        live = [s for s in snapshot.sessions if s.live]
        scene.bash_runs = {s.session_id: self._bash_runs(s.transcript_path) for s in live}
        # Only live sessions' tails are read again: an ended session's is let go.
        paths = {s.transcript_path for s in live}
        self._tails = {path: tail for path, tail in self._tails.items() if path in paths}
        scene.stops, scene.ran_commands = hook_facts(store, now)
        return scene

    def _bash_runs(self, path: str) -> list[BashRun]:
        try:
            info = os.stat(path)
        except OSError:
            return []
        stamp = (info.st_size, info.st_mtime)
        cached = self._tails.get(path)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        runs = bash_runs(path, info.st_size, self.wanted)
        self._tails[path] = (stamp, runs)
        return runs


def running_cluster_jobs(store: StateStore) -> list[LedgerJob]:
    """The ledger's running jobs that we submitted to the Slurm cluster, on any node."""
    with store.read() as conn:
        nodes = running_cluster_hosts(conn)
    return [
        job for node in nodes for job in ledger_jobs(store, node, finished=0)
        if job.state == RUNNING
    ]


def output_files(jobs: list[LedgerJob]) -> dict[int, OutputFile]:
    out: dict[int, OutputFile] = {}
    for job in jobs:
        if not job.output_path:
            continue
        try:
            info = os.stat(job.output_path)
        except OSError:
            continue
        out[job.id] = OutputFile(info.st_size, info.st_mtime)
    return out


def supervised_processes(
    jobs: list[LedgerJob], sessions: list[SessionInfo]
) -> list[SupervisedProcess]:
    """The members of each running job's cage (its root when it has none) and each live
    session's own process, with their resident memory."""
    out: list[SupervisedProcess] = []
    for job in jobs:
        pids = cgroup_pids(job.cgroup) if job.cgroup else []
        if not pids and job.pid is not None:
            pids = [job.pid]
        for pid in pids:
            stat = read_stat(pid)
            if stat is not None:
                out.append(
                    SupervisedProcess(pid, stat.start_ticks, stat.comm, stat.rss_pages * PAGE,
                                      job_id=job.id)
                )
    for session in sessions:
        if session.live and session.pid is not None:
            stat = read_stat(session.pid)
            if stat is not None:
                out.append(
                    SupervisedProcess(session.pid, stat.start_ticks, stat.comm,
                                      stat.rss_pages * PAGE, session_id=session.session_id)
                )
    return out


def hook_facts(store: StateStore, now: float) -> tuple[dict[str, StopSeen], list[HookCommand]]:
    """Each session whose latest main-thread hook event is a Stop, and the Bash commands that
    sessions ran (PostToolUse, or PostToolUseFailure for one that failed) in the last
    EVENT_WINDOW seconds."""
    try:
        # Light Bash calls wait in the spool, and each says its session is busy.
        with read_hook_events(store) as conn:
            latest = conn.execute(
                "SELECT h.session_id, h.event, h.received_at,"
                " json_extract(h.payload, '$.background_tasks') AS tasks FROM hook_events h"
                " JOIN (SELECT session_id, max(id) AS id FROM hook_events"
                "  WHERE agent_id IS NULL AND session_id IS NOT NULL"
                "  AND event NOT IN ('Notification', 'SubagentStart', 'SubagentStop')"
                "  AND received_at >= ? GROUP BY session_id) last ON h.id = last.id",
                (now - 86400.0,),
            ).fetchall()
            ran = conn.execute(
                "SELECT session_id, agent_id, received_at, cwd,"
                " json_extract(payload, '$.tool_use_id') AS tool_use_id,"
                " json_extract(payload, '$.tool_input.command') AS command FROM hook_events"
                " WHERE event IN ('PostToolUse', 'PostToolUseFailure') AND tool_name = 'Bash'"
                " AND received_at >= ?"
                " AND session_id IS NOT NULL ORDER BY id",
                (now - EVENT_WINDOW,),
            ).fetchall()
    except (sqlite3.Error, StateError):
        # Hook events only add to what the snapshot says; the pass still writes its findings
        # into the same file right after, and an error there is reported as one.
        return {}, []
    stops = {
        row["session_id"]: StopSeen(row["received_at"], _task_count(row["tasks"]))
        for row in latest
        if row["event"] == "Stop"
    }
    commands = [
        HookCommand(row["session_id"], row["agent_id"], row["tool_use_id"] or str(index),
                    row["command"], row["received_at"], row["cwd"])
        for index, row in enumerate(ran)
        if isinstance(row["command"], str)
    ]
    return stops, commands


def _task_count(tasks: Any) -> int:
    try:
        entries = json.loads(tasks) if isinstance(tasks, str) else []
    except ValueError:
        return 0
    return len(entries) if isinstance(entries, list) else 0


def bash_runs(path: str, size: int, wanted: int) -> list[BashRun]:
    """The latest `wanted` finished Bash calls in the last TAIL_BYTES of a transcript, oldest
    first; lines are parsed from the end, and only until that many are found."""
    try:
        with open(path, "rb") as handle:
            handle.seek(max(0, size - TAIL_BYTES))
            data = handle.read(TAIL_BYTES)
    except OSError:
        return []
    lines = data.split(b"\n")
    if size > TAIL_BYTES:
        lines = lines[1:]  # the first line was cut by the seek
    results: dict[str, tuple[str, float | None]] = {}
    runs: list[BashRun] = []
    for raw in reversed(lines):
        if len(runs) >= wanted:
            break
        has_result, has_bash = b"tool_result" in raw, b'"Bash"' in raw
        if not has_result and not (has_bash and results):
            continue
        try:
            record = json.loads(raw)
        except ValueError:
            continue
        content = (record.get("message") or {}).get("content")
        if not isinstance(content, list):
            continue
        for block in content:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_result":
                digest = hashlib.blake2b(
                    text_of(block.get("content")).encode(), digest_size=12
                ).hexdigest()
                at = timestamp(record.get("timestamp"))
                results[str(block.get("tool_use_id"))] = (digest, at)
            elif block.get("type") == "tool_use" and block.get("name") == "Bash":
                use_id = str(block.get("id"))
                command = (block.get("input") or {}).get("command")
                if use_id in results and isinstance(command, str):
                    digest, at = results.pop(use_id)
                    runs.append(BashRun(use_id, command, digest, at))
    runs.reverse()
    return runs[-wanted:] if wanted else runs
