"""`status --json` keeps its shape: the key set of every object, one of each kind, is pinned."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

from claude_lines import ClaudeTree, Lines
from ledger_rows import add_job
from peer_figures import peer_host_object
from swarmdeck.actions import lock, workdir_claims
from swarmdeck.config import load_config
from swarmdeck.probes.claude.sessions import SessionsProbe, sessions_with_hooks
from swarmdeck.probes.gpu import GpuCard, GpuProcess, GpuSnapshot, QuiesceHolder
from swarmdeck.probes.host import host_snapshot
from swarmdeck.probes.locks import lock_rows
from swarmdeck.probes.memory_book import ledger_jobs, memory_book
from swarmdeck.probes.nvml import READY
from swarmdeck.probes.peer_cache import PeerReading, reading_of
from swarmdeck.probes.procs import identity
from swarmdeck.probes.store_rows import open_alerts, open_findings, pending_kill_requests
from swarmdeck.snapshot import Snapshot, take_snapshot
from swarmdeck.state import StateStore

SID = "abcd0000-0000-4000-8000-000000000077"


def shapes(value: Any, path: str = "") -> set[tuple[str, tuple[str, ...]]]:
    """(path, sorted keys) of every object in `value`; a list's items share the path `[]`."""
    found: set[tuple[str, tuple[str, ...]]] = set()
    if isinstance(value, dict):
        found.add((path, tuple(sorted(value))))
        for key, inner in value.items():
            found |= shapes(inner, f"{path}.{key}")
    elif isinstance(value, list):
        for item in value:
            found |= shapes(item, f"{path}[]")
    return found


def one_of_each(home: Path, store: StateStore, holder_pid: int) -> Snapshot:
    """A snapshot holding one item of every kind the JSON has (and both forms of the two kinds
    that have two: a GPU row with and without a card, a peer read and not read)."""
    config = load_config()
    add_job(store, label="running", argv=["sleep", "1"])
    add_job(store, label="done", state="done", exit_code=0, outcome="exit", ended_at=time.time())
    with store.transaction() as conn:
        conn.execute(
            "INSERT INTO alerts (key, level, source, host, message, created_at, last_seen_at,"
            " count) VALUES ('q', 'warning', 'runner', 'vm', 'queued', ?, ?, 1)",
            (time.time(), time.time()),
        )
        conn.execute(
            "INSERT INTO findings (key, rule, subject, severity, message, last_seen_at, count,"
            " fired_at) VALUES ('idle:a1', 'idle', 'agent a1', 'warning', 'idle', ?, 1, ?)",
            (time.time(), time.time()),
        )
        conn.execute(
            "INSERT INTO kill_requests (host, pid, start_ticks, user, command, reason, state,"
            " requested_at) VALUES ('vm', 4242, 99, 'root', 'x', 'stalled', 'pending', ?)",
            (time.time(),),
        )
    tree = ClaudeTree(home / "claude")
    main = Lines(SID)
    main.prompt("go", 0)
    main.agent("toolu_outer", "Outer", "Outer work.", 1)
    tree.write_main(main)
    tree.write_pid_file(os.getpid(), SID)
    me = identity(holder_pid)
    assert me is not None
    lock.acquire(home / "repo", session="S1", command="make", holder=me)
    workdir_claims.claim_directory(home / "work" / "scratch", session="S1", purpose="copy")
    card = GpuCard(
        index=0, name="H200", uuid="GPU-1", memory_total=140 << 30, memory_used=3 << 30,
        memory_free=137 << 30, utilization=87, memory_utilization=40, temperature=61,
        processes=[GpuProcess(pid=7, used_memory=1 << 30, name="python", user="ml",
                              command="python t.py", allowlisted=False)],
    )
    holder = QuiesceHolder(pid=8, start_ticks=9, command="gpu-run x", since=time.time(),
                           alive=True)
    host = host_snapshot(config, store)
    return Snapshot(
        taken_at=time.time(),
        hosts=[host],
        jobs=ledger_jobs(store),
        gpus=GpuSnapshot(state=READY, driver_version="1", cards=[card], holders=[holder]),
        sessions=sessions_with_hooks(SessionsProbe(), store),
        alerts=open_alerts(store),
        locks=lock_rows(home / "work"),
        findings=open_findings(store),
        kill_requests=pending_kill_requests(store),
        books=[memory_book(config, store, host.name)],
        peers=[
            reading_of("box2", peer_host_object(), time.time()),
            PeerReading("box3", "not read", reason="timed out after 8 s", read_at=time.time()),
        ],
    )


def test_every_object_of_the_snapshot_json_keeps_its_keys(isolated_home: Path) -> None:
    store = StateStore.open_default()
    holder = subprocess.Popen(["sleep", "60"])
    try:
        snapshot = one_of_each(isolated_home, store, holder.pid)
    finally:
        holder.kill()
        holder.wait()
    data = json.loads(json.dumps(snapshot.to_json()))
    assert shapes(data) == PINNED


def test_a_card_less_gpu_row_keeps_its_keys(isolated_home: Path) -> None:
    data = take_snapshot(load_config(), StateStore.open_default()).to_json()
    [row] = data["gpus"]
    assert tuple(sorted(row)) == NO_CARD_ROW


PINNED: set[tuple[str, tuple[str, ...]]] = {
    ('', (
        'alerts', 'findings', 'gpus', 'hosts', 'jobs', 'jobs_truncated', 'kill_requests',
        'locks', 'sessions', 'taken_at',
    )),
    ('.alerts[]', (
        'acknowledged_at', 'count', 'created_at', 'host', 'id', 'key', 'last_seen_at', 'level',
        'message', 'source',
    )),
    ('.findings[]', (
        'acknowledged_at', 'acknowledged_by', 'advice', 'count', 'fired_at', 'first_seen_at',
        'host', 'id', 'job_id', 'key', 'last_seen_at', 'message', 'pid', 'rule', 'session_id',
        'severity', 'start_ticks', 'subject',
    )),
    ('.gpus[]', (
        'driver_version', 'index', 'memory_free', 'memory_total', 'memory_used',
        'memory_utilization', 'name', 'processes', 'quiesce_holders', 'reason', 'state',
        'temperature', 'utilization', 'uuid',
    )),
    ('.gpus[].processes[]', (
        'allowlisted', 'command', 'holder', 'name', 'pid', 'used_memory', 'user',
    )),
    ('.gpus[].quiesce_holders[]', (
        'alive', 'command', 'pid', 'since',
    )),
    ('.hosts[]', (
        'busy_cores', 'busy_fraction', 'cores', 'heavy_threads', 'load1', 'load15', 'load5',
        'local', 'machine_room', 'mem_available', 'mem_total', 'mem_used', 'name', 'not_yet_grown',
        'read_at', 'reason', 'remote_name', 'reserve', 'room', 'slice_backend', 'slice_cap',
        'slice_path', 'slice_placement', 'slice_problem', 'slice_used', 'state', 'taken_at',
        'threads_declared', 'threads_free', 'used_outside_slice',
    )),
    ('.hosts[]', (
        'busy_cores', 'busy_fraction', 'cores', 'heavy_threads', 'load1', 'load15', 'load5',
        'local', 'machine_room', 'mem_available', 'mem_total', 'mem_used', 'name', 'not_yet_grown',
        'reserve', 'room', 'slice_backend', 'slice_cap', 'slice_path', 'slice_placement',
        'slice_problem', 'slice_used', 'state', 'taken_at', 'threads_declared', 'threads_free',
        'used_outside_slice',
    )),
    ('.hosts[]', (
        'local', 'name', 'read_at', 'reason', 'state',
    )),
    ('.jobs[]', (
        'admitted_at', 'admitted_via', 'agent_id', 'argv', 'booked', 'cap', 'cgroup',
        'cores_in_use', 'created_at', 'current', 'cwd', 'declared_cap', 'detached', 'ended_at',
        'exit_code', 'fingerprint', 'hit_ceiling', 'host', 'id', 'kernel_peak', 'label',
        'oom_score_adj', 'outcome', 'output_path', 'peak', 'pid', 'runner_alive', 'runtime',
        'scope', 'serial_marker_path', 'serial_reason', 'session_id', 'stale', 'start_ticks',
        'started_at', 'state', 'threads', 'threads_at_once', 'timeout',
    )),
    ('.kill_requests[]', (
        'command', 'finding_key', 'host', 'id', 'job_id', 'pid', 'reason', 'requested_at',
        'requested_by', 'slurm_job_id', 'start_ticks', 'state', 'user',
    )),
    ('.locks[]', (
        'command', 'kind', 'lock_file', 'path', 'pid', 'reason', 'session', 'since', 'start_ticks',
        'state',
    )),
    ('.sessions[]', (
        'cache_read_tokens', 'cache_write_tokens', 'context_bytes_max', 'context_bytes_mean',
        'context_bytes_total', 'context_fill', 'context_tokens', 'context_window', 'cost_usd',
        'cwd', 'dispatches', 'effective_parallelism', 'git_branch', 'hook_running_agents',
        'last_activity_at', 'last_answer_at', 'live', 'main_context_tokens', 'mode', 'model',
        'nested_dispatches', 'parallelism_timeline', 'peak_parallel', 'pid', 'prices_date',
        'process_started_at', 'running_subagents', 'session_id', 'started_at', 'state',
        'subagents', 'title', 'tmux', 'tokens_in', 'tokens_out', 'tool_in_flight',
        'tool_in_flight_since', 'tool_in_flight_summary', 'transcript_path', 'version',
        'waiting_for', 'waiting_since',
    )),
    ('.sessions[].subagents[]', (
        'background', 'context_bytes', 'description', 'ended_at', 'id', 'last_activity_at',
        'parent_id', 'started_at', 'status', 'tokens', 'tool_calls', 'tool_in_flight',
        'tool_in_flight_since', 'tool_in_flight_summary', 'tool_use_id', 'transcript_path', 'type',
    )),
}
"""(path, keys) of every object `status --json` prints, as it printed them before the
snapshot was typed; `[]` marks a list's items."""

NO_CARD_ROW = ('index', 'quiesce_holders', 'reason', 'state')
"""The one `gpus` row of a host without cards."""
