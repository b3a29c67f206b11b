"""What the hook spool and the hook history cost the calls and runs that meet them, in one run.

Two figures, each before and after, measured side by side in a scratch state folder:

- a light hook call while the spool's old lock and the database's write lock are held (a
  fold, or a writer of an older swarmdeck): wall time per call, against the same call with
  nothing held. Before, each such call waited for the lock until its 2 s budget ran out and
  its call was lost; now it takes no lock.
- what `swarmdeck run` does inside its write lock to name the subagent that started it
  (jobrecord.started_by_agent), with 1k and 100k hook rows of the job's session in the last
  hour: the query before (every PreToolUse row of the session in the hour, read as JSON) and
  the one now (the session's HOOK_SCAN newest rows), for a command the hook saw last and one
  it never saw.

    python bench/bench_hook_spool.py [--calls 30]
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
SID = "bench-session"
OLD_QUERY = (
    "SELECT agent_id FROM hook_events WHERE event = 'PreToolUse' AND session_id = ?"
    " AND tool_name = 'Bash' AND received_at >= ?"
    " AND instr(json_extract(payload, '$.tool_input.command'), ?) > 0"
    " ORDER BY id DESC LIMIT 1"
)
"""jobrecord.started_by_agent's query before: it reads every row of the session's hour."""


def light_input(n: int) -> bytes:
    return json.dumps({
        "session_id": SID, "hook_event_name": "PreToolUse", "tool_name": "Bash",
        "cwd": "/tmp", "tool_input": {"command": f"ls {n}", "description": "list"},
    }).encode()


NOT_RECORDED: list[str] = []
"""What the calls that did not record themselves said."""


def hook_ms(n: int) -> float:
    started = time.perf_counter()
    done = subprocess.run([SWARMDECK, "hook", "pre-tool-use"], input=light_input(n),
                          capture_output=True, timeout=60, check=False)
    took = (time.perf_counter() - started) * 1000
    if done.stderr:
        NOT_RECORDED.append(done.stderr.decode().strip())
    return took


def light_calls(calls: int) -> list[str]:
    """Median ms of a light call with the locks free and held, interleaved."""
    import sqlite3

    from swarmdeck import paths
    from swarmdeck.hook_events import fold, spool_path
    from swarmdeck.state import StateStore

    store = StateStore.open_default()
    store.close()
    hook_ms(-1)  # builds the settings cache
    free, held = [], []
    for n in range(calls):
        free.append(hook_ms(n))
        fd = os.open(spool_path(paths.state_db_path()), os.O_WRONLY | os.O_CREAT, 0o600)
        os.lockf(fd, os.F_LOCK, 0)
        writer = sqlite3.connect(paths.state_db_path(), isolation_level=None)
        writer.execute("BEGIN IMMEDIATE")
        try:
            held.append(hook_ms(calls + n))
        finally:
            writer.execute("ROLLBACK")
            writer.close()
            os.close(fd)
    fold(store)
    with store.read() as conn:
        rows = conn.execute("SELECT count(*) FROM hook_events").fetchone()[0]
    store.close()
    return [
        "| light hook call | median ms | max ms |",
        "| --- | ---: | ---: |",
        f"| nothing held | {statistics.median(free):.1f} | {max(free):.1f} |",
        f"| spool lock and database write lock held | {statistics.median(held):.1f}"
        f" | {max(held):.1f} |",
        "",
        f"- held / free (medians): {statistics.median(held) / statistics.median(free):.2f};"
        f" rows recorded: {rows} of {2 * calls + 1} calls",
        *(f"- a call said: {said}" for said in sorted(set(NOT_RECORDED))),
    ]


def history_store(folder: Path, rows: int) -> str:
    """A store with `rows` PreToolUse Bash rows of one session in the last hour."""
    from swarmdeck.hook_events import INSERT, event_row
    from swarmdeck.state import StateStore

    os.environ["SWARMDECK_STATE_DIR"] = str(folder)
    store = StateStore.open_default()
    now = time.time()
    with store.transaction() as conn:
        for n in range(rows):
            data = {"session_id": SID, "agent_id": f"agent{n % 7}", "tool_name": "Bash",
                    "hook_event_name": "PreToolUse", "cwd": "/tmp",
                    "tool_input": {"command": f"make -j8 test-{n}", "description": "x" * 80}}
            conn.execute(INSERT, event_row("PreToolUse", data, now - 3000 + n * 2900 / rows))
        conn.execute(
            "INSERT INTO jobs (argv, state, label, cap, host) VALUES (?, 'admitted', 't', 1, 'h')",
            (json.dumps(["make", "-j8", f"test-{rows - 1}"]),),
        )
    path = str(store.path)
    store.close()
    return path


def in_lock_ms(db: str, command: str, new: bool, repeat: int = 5) -> float:
    """Median ms of the hook read inside a write transaction, as mark_running does it."""
    from swarmdeck.actions.jobrecord import HOOK_LOOKBACK, started_by_agent
    from swarmdeck.state import StateStore

    store = StateStore(Path(db), verify=False)
    times = []
    for _ in range(repeat):
        with store.transaction() as conn:
            job_id = conn.execute("SELECT max(id) FROM jobs").fetchone()[0]
            conn.execute("UPDATE jobs SET argv = ? WHERE id = ?", (json.dumps(command.split()),
                                                                   job_id))
            started = time.perf_counter()
            if new:
                started_by_agent(conn, job_id, SID, time.time())
            else:
                conn.execute(OLD_QUERY, (SID, time.time() - HOOK_LOOKBACK, command)).fetchone()
            times.append((time.perf_counter() - started) * 1000)
    store.close()
    return statistics.median(times)


def history(scratch: Path) -> list[str]:
    lines = [
        "| session's rows in the hour | command | before ms | now ms |",
        "| ---: | --- | ---: | ---: |",
    ]
    figures = {}
    for rows in (1_000, 100_000):
        db = history_store(scratch / f"history-{rows}", rows)
        for case, command in (("seen last", f"make -j8 test-{rows - 1}"),
                              ("never seen", "make -j8 never")):
            before, now = in_lock_ms(db, command, new=False), in_lock_ms(db, command, new=True)
            figures[rows, case] = (before, now)
            lines.append(f"| {rows:,} | {case} | {before:.2f} | {now:.2f} |")
    lines.append("")
    for case in ("seen last", "never seen"):
        small, big = figures[1_000, case], figures[100_000, case]
        lines.append(f"- {case}: 100k rows / 1k rows: before {big[0] / small[0]:.1f}x,"
                     f" now {big[1] / small[1]:.1f}x")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="swarmdeck-bench-spool-") as scratch:
        root = Path(scratch)
        for name, place in (("SWARMDECK_STATE_DIR", "state"), ("SWARMDECK_CONFIG", "config.toml"),
                            ("CLAUDE_CONFIG_DIR", "claude"), ("SWARMDECK_RUN_DIR", "run")):
            os.environ[name] = str(root / place)
        out = ["## Light calls against held locks", "",
               f"Measured with `python bench/bench_hook_spool.py`; {args.calls} calls per case,"
               f" interleaved; {os.cpu_count()} cores.", ""]
        out += light_calls(args.calls)
        out += ["", "## A run's hook read inside the write lock", ""]
        out += history(root)
    print("\n".join(out))


if __name__ == "__main__":
    main()
