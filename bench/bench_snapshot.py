"""What one refresh of the control room costs, and that it follows what is supervised.

One `take_snapshot` as the app takes it (kept CPU sampler, sessions probe and usage tracker),
with 20 real caged jobs (`swarmdeck run -- sleep`), first with no extra processes and then with
1,000 sleeping processes outside any cage. Goal: ≤ 20 ms with the extra processes, and the two
within 1.2× of each other (the ratio is measured in this one run). The same with the jobs read
by the full /proc walk (`process_tree`, what every refresh did before) is shown beside it.

Needs root where cgroup v1 memory is writable; it builds its own slice and removes it.

    .venv/bin/python bench/bench_snapshot.py [--jobs 20] [--extra 1000] [--runs 15] [--write FILE]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import platform
import pstats
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from scene import caged_jobs, load_average, make_slice, remove_slice, scratch_home, sleepers
from swarmdeck.config import load_config
from swarmdeck.probes import kernel_files, procs, usage
from swarmdeck.probes.claude.sessions import SessionsProbe
from swarmdeck.probes.host import CpuSampler
from swarmdeck.snapshot import take_snapshot
from swarmdeck.state import StateStore

RESULTS = Path(__file__).resolve().parent / "results" / "snapshot.md"
SETTLE = 2.0
"""Seconds for the machine to quieten after starting the extra processes."""


def refresher() -> Callable[[], object]:
    """A snapshot taker kept the way the app keeps one, already warm, its kernel files held
    open between refreshes as the app holds them (probes/kernel_files.py)."""
    config = load_config()
    store = StateStore.open_default()
    sampler, sessions, tracker = CpuSampler(), SessionsProbe(), usage.UsageTracker()
    kernel_files.hold_open()

    def refresh() -> object:
        snapshot = take_snapshot(config, store, sampler, sessions, tracker)
        kernel_files.release_unread()
        return snapshot

    refresh()
    refresh()
    return refresh


@dataclass(frozen=True)
class Timing:
    """Medians of one case: wall seconds, and this process's CPU seconds (less hit by load)."""

    wall: float
    cpu: float


def timings(refresh: Callable[[], object], runs: int) -> Timing:
    walls, cpus = [], []
    for _ in range(runs):
        wall, cpu = time.perf_counter(), time.process_time()
        refresh()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return Timing(statistics.median(walls), statistics.median(cpus))


class WalkingTracker(usage.UsageTracker):
    """Every job's threads found by the full /proc walk, as each refresh did before."""

    def update(self, jobs):  # type: ignore[no-untyped-def]
        for job in jobs.values():
            pids = usage.process_tree(job.root)
            usage.sample_threads([tid for pid in pids for tid in procs.thread_ids(pid)])
        return dict.fromkeys(jobs)


def walking_refresher() -> Callable[[], object]:
    config = load_config()
    store = StateStore.open_default()
    sampler, sessions, tracker = CpuSampler(), SessionsProbe(), WalkingTracker()

    def refresh() -> object:
        return take_snapshot(config, store, sampler, sessions, tracker)

    refresh()
    return refresh


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def profile_top(refresh: Callable[[], object], lines: int = 12) -> str:
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(5):
        refresh()
    profiler.disable()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(lines)
    return out.getvalue()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=20)
    parser.add_argument("--extra", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--write", type=Path, default=RESULTS)
    parser.add_argument("--profile", action="store_true", help="print where the time goes")
    args = parser.parse_args()
    load_before = load_average()
    slice_path = make_slice("bench-snapshot")
    ledgers: list[Path] = []
    try:
        with tempfile.TemporaryDirectory(prefix="swarmdeck-bench-") as tmp:
            home = scratch_home(Path(tmp), slice_path)
            ledgers.append(home.db)
            os.environ.update(home.env)
            with caged_jobs(home, args.jobs):
                refresh = refresher()
                walking = walking_refresher()
                quiet = timings(refresh, args.runs)
                quiet_walk = timings(walking, 3)
                with sleepers(args.extra):
                    time.sleep(SETTLE)
                    processes = len([name for name in os.listdir("/proc") if name.isdigit()])
                    busy = timings(refresh, args.runs)
                    busy_walk = timings(walking, 3)
                    if args.profile:
                        print(profile_top(refresh))
    finally:
        remove_slice(slice_path, ledgers)
    lines = [
        "# One refresh: take_snapshot with caged jobs, with and without many other processes",
        "",
        f"Measured by `bench/bench_snapshot.py` on {platform.node()} ({os.cpu_count()} CPUs,"
        f" kernel {platform.release()}, cgroup v1 slice), {time.strftime('%Y-%m-%d %H:%M')};"
        f" load average before the run {load_before}, after {load_average()} (the machine is"
        " shared: figures are noisy, the ratios are from this one run).",
        "",
        f"{args.jobs} running `swarmdeck run -- sleep` jobs; the app's kept sampler, sessions"
        f" probe and usage tracker; median of {args.runs} refreshes (3 for the /proc walk).",
        "",
        "| case | from their cages: wall | CPU | by walking /proc: wall | CPU |",
        "| --- | ---: | ---: | ---: | ---: |",
        f"| {args.jobs} jobs, no extra processes | {ms(quiet.wall)} | {ms(quiet.cpu)} |"
        f" {ms(quiet_walk.wall)} | {ms(quiet_walk.cpu)} |",
        f"| {args.jobs} jobs, +{args.extra} sleeping processes ({processes} on the host) |"
        f" {ms(busy.wall)} | {ms(busy.cpu)} | {ms(busy_walk.wall)} | {ms(busy_walk.cpu)} |",
        f"| ratio, with / without the extra processes | {busy.wall / quiet.wall:.2f}× |"
        f" {busy.cpu / quiet.cpu:.2f}× | {busy_walk.wall / quiet_walk.wall:.2f}× |"
        f" {busy_walk.cpu / quiet_walk.cpu:.2f}× |",
        "",
        f"- with {args.extra} extra processes: {ms(busy.wall)} wall (goal ≤ 20 ms):"
        f" {'within' if busy.wall <= 0.020 else 'over'}",
        f"- with / without: {busy.wall / quiet.wall:.2f}× wall, {busy.cpu / quiet.cpu:.2f}× CPU"
        f" (goal ≤ 1.2×): {'within' if busy.wall / quiet.wall <= 1.2 else 'over'}",
        f"- reading the jobs from their cages instead of walking /proc, with the extra"
        f" processes: {busy_walk.wall / busy.wall:.0f}× less wall time",
        "",
    ]
    args.write.parent.mkdir(parents=True, exist_ok=True)
    args.write.write_text("\n".join(lines))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
