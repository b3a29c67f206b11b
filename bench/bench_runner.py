"""What the memory cage costs: `swarmdeck run` start-up against the bare command, and how fast
admission decides when many runners submit at once.

Measured as ratios and rates within one run on this machine (never as timed tests):
  1. start-up overhead: median wall time of N runs of `swarmdeck run -- true` over the median
     of N runs of `true` itself;
  2. admission throughput, end to end: 100 `swarmdeck run` processes started at once against a
     slice with room for all; admissions per second from the first admitted_at to the last;
  3. admission throughput, decisions only: 100 threads each making one admission decision (one
     BEGIN IMMEDIATE transaction reading the book and inserting the row) on one state file;
  4. what verifying the state file costs a runner (PRAGMA quick_check when the store opens) on a
     fresh file and on one grown to the size a week of hook events gives it.

Needs root where cgroup v1 memory is writable; it builds its own slice and removes it.
Writes bench/results/runner.md.

    .venv/bin/python bench/bench_runner.py [--runs N] [--submissions N]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from swarmdeck.actions.admission import JobRow, attempt
from swarmdeck.actions.booking import Booking, Via
from swarmdeck.actions.cage import remove_cgroup
from swarmdeck.probes.cgroups import cgroup_pids, read_hierarchies
from swarmdeck.probes.ledger import SliceFacts
from swarmdeck.probes.machine import mem_total
from swarmdeck.probes.procs import own_identity
from swarmdeck.sizes import format_size
from swarmdeck.state import StateStore

MIB = 1 << 20
SWARMDECK = str(Path(sys.executable).parent / "swarmdeck")
RESULTS = Path(__file__).resolve().parent / "results" / "runner.md"


def make_slice() -> Path:
    root = read_hierarchies().v1_memory
    if root is None or not os.access(root, os.W_OK):
        sys.exit("bench_runner: needs a writable cgroup v1 memory hierarchy (run as root)")
    path = root / f"swarmdeck-bench-{os.getpid()}"
    # Only a killed earlier run that had this pid can have left one: start from nothing.
    remove_slice(path)
    path.mkdir()
    return path


def remove_slice(path: Path) -> None:
    if not path.exists():
        return
    for cgroup in [*(p for p in path.iterdir() if p.is_dir()), path]:
        for pid in cgroup_pids(cgroup):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, 9)
        remove_cgroup(cgroup)


def wall(argv: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def startup_overhead(runs: int, env: dict[str, str]) -> tuple[float, float, float]:
    """Median seconds of `true`, of the interpreter alone and of `swarmdeck run -- true`,
    interleaved."""
    bare, python, caged = [], [], []
    wall([SWARMDECK, "run", "--", "true"], env)
    for _ in range(runs):
        bare.append(wall(["true"], env))
        python.append(wall([sys.executable, "-c", "pass"], env))
        caged.append(wall([SWARMDECK, "run", "--", "true"], env))
    return statistics.median(bare), statistics.median(python), statistics.median(caged)


def end_to_end_throughput(count: int, env: dict[str, str], db: Path) -> tuple[float, float]:
    """(admissions per second from first to last admission, wall seconds for all)."""
    started = time.perf_counter()
    procs = [
        subprocess.Popen(
            [SWARMDECK, "run", "--cap", "8M", "--wait", "300", "--", "true"], env=env,
            stdout=subprocess.DEVNULL,
        )
        for _ in range(count)
    ]
    codes = [proc.wait() for proc in procs]
    elapsed = time.perf_counter() - started
    if any(codes):
        raise RuntimeError(f"some runs failed: {sorted(set(codes))}")
    with StateStore(db).read() as conn:
        first, last = conn.execute(
            "SELECT MIN(admitted_at), MAX(admitted_at) FROM jobs WHERE cap = ?", (8 * MIB,)
        ).fetchone()
    return (count - 1) / max(last - first, 1e-9), elapsed


def decision_throughput(count: int, folder: Path) -> float:
    """Admission decisions per second: `count` threads, one decision each, one state file."""
    path = folder / "decisions.db"
    StateStore(path).close()
    facts = SliceFacts(1 << 40, MIB, "cgroup-v1", None, "bench", "")
    row = JobRow(
        label="bench", host="bench", fingerprint="bench", argv=["true"], cwd=folder,
        runner=own_identity(), booking=Booking(MIB, MIB, Via.CAP, 0), threads=None,
        detached=False, timeout=None,
    )
    gate = threading.Barrier(count + 1)

    def decide() -> None:
        store = StateStore(path, verify=False)
        gate.wait()
        attempt(store, row, facts, None, lambda job_id: folder / str(job_id))
        store.close()

    threads = [threading.Thread(target=decide) for _ in range(count)]
    for thread in threads:
        thread.start()
    gate.wait()
    started = time.perf_counter()
    for thread in threads:
        thread.join()
    return count / (time.perf_counter() - started)


def verification_cost(folder: Path, megabytes: int) -> tuple[float, float, float]:
    """(MB of the file, median seconds to open it with quick_check, without), 5 opens each."""
    path = folder / "grown.db"
    store = StateStore(path)
    payload = json.dumps({"tool_input": {"command": "x" * 700}})
    with store.transaction() as conn:
        conn.executemany(
            "INSERT INTO hook_events (event, session_id, payload) VALUES (?, ?, ?)",
            [("PreToolUse", "bench", payload)] * (megabytes * 1200),
        )
    store.connect().execute("PRAGMA wal_checkpoint(TRUNCATE)")
    store.close()
    timings: dict[bool, list[float]] = {True: [], False: []}
    for _ in range(5):
        for verify in (True, False):
            started = time.perf_counter()
            StateStore(path, verify=verify).close()
            timings[verify].append(time.perf_counter() - started)
    size = path.stat().st_size / MIB
    return size, statistics.median(timings[True]), statistics.median(timings[False])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--submissions", type=int, default=100)
    args = parser.parse_args()
    load_before = Path("/proc/loadavg").read_text().split()[0]
    slice_path = make_slice()
    try:
        with tempfile.TemporaryDirectory(prefix="swarmdeck-bench-") as tmp:
            folder = Path(tmp)
            slice_cap = 2 * 1024 * MIB
            config = folder / "config.toml"
            config.write_text(
                f'[memory]\nslice = "{slice_path}"\nreserve = "{mem_total() - slice_cap}"\n'
                'margin = "1M"\n'
            )
            env = dict(os.environ, SWARMDECK_CONFIG=str(config),
                       SWARMDECK_STATE_DIR=str(folder / "state"))
            # Measure what an installed swarmdeck costs: with its bytecode cached.
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            bare, python, caged = startup_overhead(args.runs, env)
            fresh = verification_cost(folder / "fresh", 0)
            grown = verification_cost(folder / "grown", 16)
            rate, elapsed = end_to_end_throughput(
                args.submissions, env, folder / "state" / "state.db"
            )
            decisions = decision_throughput(args.submissions, folder)
    finally:
        remove_slice(slice_path)
    lines = [
        "# swarmdeck run: cage overhead and admission throughput",
        "",
        f"Measured by `bench/bench_runner.py` on {platform.node()} ({os.cpu_count()} CPUs,"
        f" {format_size(mem_total())} RAM, kernel {platform.release()}, cgroup v1 slice),"
        f" {time.strftime('%Y-%m-%d %H:%M')}, load average before the run"
        f" {load_before}.",
        "",
        "| figure | value |",
        "| --- | --- |",
        f"| `true`, median of {args.runs} | {bare * 1000:.1f} ms |",
        f"| `python -c pass` (this venv's interpreter), median of {args.runs} |"
        f" {python * 1000:.1f} ms |",
        f"| `swarmdeck run -- true`, median of {args.runs} | {caged * 1000:.1f} ms |",
        f"| start-up overhead (ratio of medians) | {caged / bare:.0f}× |",
        f"| start-up overhead (difference of medians) | {(caged - bare) * 1000:.0f} ms |",
        f"| {args.submissions} concurrent `swarmdeck run` processes: admissions/s,"
        f" first to last admission | {rate:.1f} /s |",
        f"| {args.submissions} concurrent `swarmdeck run` processes: wall time for all |"
        f" {elapsed:.1f} s |",
        f"| {args.submissions} concurrent admission decisions in threads (one BEGIN IMMEDIATE"
        f" each) | {decisions:.0f} /s |",
        *(
            f"| opening a {size:.1f} MB state file: with quick_check / without |"
            f" {checked * 1000:.1f} ms / {unchecked * 1000:.1f} ms |"
            for size, checked, unchecked in (fresh, grown)
        ),
        "",
        "The ratio is large because `true` itself takes about a millisecond; the difference is",
        "what a caged run adds: the interpreter (the `python -c pass` row), importing the",
        "runner's modules (the largest part: Python 3.11 compiles the methods of every frozen",
        "dataclass it builds), config, state file, fingerprint (one `git rev-parse`), cgroup",
        "set-up, admission, peak recording. End-to-end admission is bound by starting",
        f"{args.submissions} Python processes on {os.cpu_count()} CPUs; the decision itself",
        "is the row after it. The runner verifies the state file on every start (it writes to",
        "it, and a corrupt file must be refused before any write), which grows with the file:",
        "the last row.",
        "",
    ]
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text("\n".join(lines))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
