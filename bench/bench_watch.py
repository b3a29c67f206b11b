"""What one `swarmdeck watch --once` pass costs over a busy scene: 20 running jobs (real
processes, output files), 10 live sessions (real transcripts of 300 Bash calls each, pid files
naming real processes), 200 open findings and 500 hook events. Budget: 50 ms a pass.

The pass is the engine's own work over a snapshot already taken (the scene's facts, the eleven
rules, the upsert of every draft and the closing of what cleared, in one transaction), measured
cold: a new engine each time, as `watch --once` starts, so every transcript tail is parsed
again. The snapshot itself (the probes `status` also pays) is timed beside it, and so is the
whole command.

    python bench/bench_watch.py [--runs 20] [--write bench/results/watch.md]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SWARMDECK = Path(sys.executable).parent / "swarmdeck"
BUDGET = 0.050
JOBS = 20
SESSIONS = 10
FINDINGS = 200
CALLS = 300


def build_scene(scratch: Path, sleepers: list[subprocess.Popen[bytes]]) -> None:
    from swarmdeck.probes.host import local_host_name
    from swarmdeck.probes.procs import identity, own_identity
    from swarmdeck.state import StateStore

    store = StateStore.open_default()
    now = time.time()
    runner = own_identity()
    host = local_host_name()
    with store.transaction() as conn:
        for n, proc in enumerate(sleepers[:JOBS]):
            me = identity(proc.pid)
            assert me is not None
            output = scratch / f"job{n}.out"
            output.write_text("x" * 1000)
            if n % 2:
                os.utime(output, (now - 7200, now - 7200))
            conn.execute(
                "INSERT INTO jobs (label, host, argv, cwd, state, pid, start_ticks, runner_pid,"
                " runner_start_ticks, started_at, output_path, threads, session_id, agent_id)"
                " VALUES (?, ?, ?, '/w', 'running', ?, ?, ?, ?, ?, ?, 4, ?, ?)",
                (f"job{n}", host, json.dumps(["make", "-j4", f"t{n}"]), proc.pid,
                 me.start_ticks, runner.pid, runner.start_ticks, now - 3600, str(output),
                 f"sess-{n % SESSIONS:04d}", f"agent{n}"),
            )
        for n in range(FINDINGS):
            conn.execute(
                "INSERT INTO findings (key, rule, subject, severity, message, advice, session_id,"
                " first_seen_at, last_seen_at, count, fired_at) VALUES (?, 'long_tool_call', ?,"
                " 'warning', 'ran long', 'look', ?, ?, ?, 5, ?)",
                (f"old:{n}", f"subject {n}", f"sess-{n % SESSIONS:04d}", now - 60, now - 1,
                 now - 60),
            )
        for n in range(500):
            conn.execute(
                "INSERT INTO hook_events (event, session_id, tool_name, payload, received_at)"
                " VALUES ('PostToolUse', ?, 'Bash', ?, ?)",
                (f"sess-{n % SESSIONS:04d}",
                 json.dumps({"tool_use_id": f"t{n}", "tool_input": {"command": f"ls {n}"}}),
                 now - 60 + n * 0.1),
            )
    projects = scratch / "claude" / "projects" / "-w"
    projects.mkdir(parents=True)
    sessions = scratch / "claude" / "sessions"
    sessions.mkdir(parents=True)
    for n in range(SESSIONS):
        sid = f"sess-{n:04d}"
        proc = sleepers[JOBS + n]
        me = identity(proc.pid)
        assert me is not None
        (sessions / f"{proc.pid}.json").write_text(json.dumps(
            {"pid": proc.pid, "sessionId": sid, "cwd": "/w", "procStart": str(me.start_ticks),
             "status": "busy"}
        ))
        lines = [{"type": "user", "sessionId": sid, "cwd": "/w", "uuid": f"{sid}-0",
                  "timestamp": "2026-12-01T10:00:00.000Z",
                  "message": {"role": "user", "content": "go"}}]
        for c in range(CALLS):
            lines.append({"type": "assistant", "sessionId": sid, "uuid": f"{sid}-a{c}",
                          "timestamp": "2026-12-01T10:00:01.000Z",
                          "message": {"id": f"m{c}", "role": "assistant", "content": [
                              {"type": "tool_use", "id": f"tu{c}", "name": "Bash",
                               "input": {"command": f"pytest -q tests/t{c % 7}.py"}}]}})
            lines.append({"type": "user", "sessionId": sid, "uuid": f"{sid}-r{c}",
                          "timestamp": "2026-12-01T10:00:02.000Z",
                          "message": {"role": "user", "content": [
                              {"type": "tool_result", "tool_use_id": f"tu{c}",
                               "content": f"{c} passed " + "." * 200}]}})
        (projects / f"{sid}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))


def measure(runs: int) -> dict[str, float]:
    from swarmdeck.config import load_config
    from swarmdeck.snapshot import take_snapshot
    from swarmdeck.state import StateStore
    from swarmdeck.watchdog.loop import Watchdog

    config = load_config()
    store = StateStore.open_default()
    snapshots, passes, commands = [], [], []
    for _ in range(runs):
        start = time.perf_counter()
        snapshot = take_snapshot(config, store)
        snapshots.append(time.perf_counter() - start)
        engine = Watchdog(config, store)
        start = time.perf_counter()
        engine.run_pass(snapshot)
        passes.append(time.perf_counter() - start)
        engine.close()
        start = time.perf_counter()
        subprocess.run([str(SWARMDECK), "watch", "--once", "--json"], check=True,
                       stdout=subprocess.DEVNULL)
        commands.append(time.perf_counter() - start)
    with store.read() as conn:
        open_count = conn.execute(
            "SELECT count(*) FROM findings WHERE resolved_at IS NULL"
        ).fetchone()[0]
    return {
        "pass": statistics.median(passes),
        "pass_max": max(passes),
        "snapshot": statistics.median(snapshots),
        "command": statistics.median(commands),
        "open": open_count,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--write", type=Path, help="also write the results as markdown here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="swarmdeck-bench-watch-") as folder:
        scratch = Path(folder)
        os.environ.update(
            SWARMDECK_STATE_DIR=str(scratch / "state"),
            SWARMDECK_CONFIG=str(scratch / "config.toml"),
            CLAUDE_CONFIG_DIR=str(scratch / "claude"),
        )
        (scratch / "config.toml").write_text("[watchdog]\nmin_duration = 0\n")
        sleepers = [subprocess.Popen(["sleep", "600"]) for _ in range(JOBS + SESSIONS)]
        try:
            build_scene(scratch, sleepers)
            figures = measure(args.runs)
        finally:
            for proc in sleepers:
                proc.kill()
                proc.wait()
    ratio = figures["pass"] / BUDGET
    text = (
        f"- scene: {JOBS} running jobs, {SESSIONS} live sessions ({CALLS} Bash calls each),"
        f" {figures['open']} findings open after the runs\n"
        f"- one pass (cold engine), median of {args.runs}: {figures['pass'] * 1000:.1f} ms"
        f" (max {figures['pass_max'] * 1000:.1f} ms) = {ratio:.2f} x the 50 ms budget\n"
        f"- the snapshot it looks at: {figures['snapshot'] * 1000:.1f} ms;"
        f" the whole `swarmdeck watch --once --json`: {figures['command'] * 1000:.0f} ms\n"
    )
    print(text, end="")
    if args.write:
        args.write.parent.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        args.write.write_text(f"# watch --once pass over a busy scene ({stamp})\n\n{text}")
    return 0 if ratio <= 1.0 else 1


if __name__ == "__main__":
    sys.exit(main())
