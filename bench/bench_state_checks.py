"""What the ledger identity checks cost a store's open: the mark beside the state file, the scan
of /proc/locks for readers cut off from their log, and the ledger id read from the file.

Measured as ratios within one run on this machine (never as timed tests): the best of several
rounds of N calls of each check, over the best of N opens of the whole store (`StateStore(...)`
then `close()`, as every `swarmdeck run` opens it once), with 0 and with R other processes
holding the store open, each adding its locks to /proc/locks as running jobs' runners do.

Writes bench/results/state_checks.md.

    .venv/bin/python bench/bench_state_checks.py [--calls N] [--readers R]
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from swarmdeck.ledger_mark import read_mark, readers_without_log
from swarmdeck.state import StateStore

RESULTS = Path(__file__).resolve().parent / "results" / "state_checks.md"
ROUNDS = 5
HOLD = (
    "import sqlite3, sys, time; c = sqlite3.connect(sys.argv[1]);"
    " c.execute('SELECT COUNT(*) FROM jobs').fetchone(); print('ready', flush=True);"
    " time.sleep(600)"
)


def best_per_call(calls: int, work: Callable[[], object]) -> float:
    best = float("inf")
    for _ in range(ROUNDS):
        started = time.perf_counter()
        for _ in range(calls):
            work()
        best = min(best, (time.perf_counter() - started) / calls)
    return best


def open_and_close(db: str) -> None:
    StateStore(db).close()


def measure(db: str, calls: int) -> dict[str, float]:
    store = StateStore(db)
    store.connect()  # as a running job's runner keeps its store open
    status = os.stat(db)
    mark = read_mark(db)
    figures = {
        "open": best_per_call(calls, lambda: open_and_close(db)),
        "mark": best_per_call(calls, lambda: read_mark(db)),
        "locks": best_per_call(calls, lambda: readers_without_log(db, status)),
        "ledger": best_per_call(calls, lambda: store._own_ledger(mark)),
    }
    store.close()
    return figures


def lock_lines() -> int:
    with open("/proc/locks", "rb") as file:
        return file.read().count(b"\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--readers", type=int, default=100)
    args = parser.parse_args()
    folder = tempfile.mkdtemp(prefix="swarmdeck-bench-")
    db = os.path.join(folder, "state.db")
    StateStore(db).close()
    rows = []
    quiet = measure(db, args.calls)
    rows.append(("no other process", lock_lines(), quiet))
    holders = [
        subprocess.Popen([sys.executable, "-c", HOLD, db], stdout=subprocess.PIPE, text=True)
        for _ in range(args.readers)
    ]
    try:
        for holder in holders:
            assert holder.stdout is not None and holder.stdout.readline() == "ready\n"
        busy = measure(db, args.calls)
        rows.append((f"{args.readers} processes holding it open", lock_lines(), busy))
    finally:
        for holder in holders:
            holder.kill()
            holder.wait()
    lines = [
        "# The ledger identity checks on a store's open",
        "",
        f"Measured by `bench/bench_state_checks.py` on {platform.node()} ({os.cpu_count()} CPUs),"
        f" {time.strftime('%Y-%m-%d %H:%M')}, load average {os.getloadavg()[0]:.2f}; best of"
        f" {ROUNDS} rounds of {args.calls} calls each.",
        "",
        "| state file | /proc/locks lines | open | mark / open | /proc/locks scan / open |"
        " ledger id read / open | all three / open |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, locks, figures in rows:
        share = {key: figures[key] / figures["open"] for key in ("mark", "locks", "ledger")}
        lines.append(
            f"| {name} | {locks} | {figures['open'] * 1e3:.2f} ms | {share['mark']:.1%} |"
            f" {share['locks']:.1%} |"
            f" {share['ledger']:.1%} | {sum(share.values()):.1%} |"
        )
    lines += [
        "",
        "The open is the whole `StateStore(...)` and `close()` that every `swarmdeck run`",
        "does once (bench/results/runner.md: a caged `true` costs some 50 ms on these",
        "machines). The scan reads every line of /proc/locks, so it grows with the locks held",
        "machine-wide: each process holding the store open adds two (the file's shared lock,",
        "the index's).",
    ]
    RESULTS.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
