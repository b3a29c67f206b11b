"""What the stop guardian (actions/stop_guard.py) adds to a tree stop that found something alive:
the stop of N `sleep` leftovers, guarded (a forked guardian, as a single-threaded runner starts
it) against unguarded, in one run, as a ratio. A stop that finds nothing alive starts no
guardian and costs what it did.

    python bench/bench_stop_guard.py [--rounds 10] [--write bench/results/stop_guard.md]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import time
from pathlib import Path


def one_stop(leftovers: int, guarded: bool) -> float:
    from swarmdeck.actions import kill
    from swarmdeck.actions.stop_guard import StopGuard
    from swarmdeck.probes.procs import identity

    root = subprocess.Popen(
        ["sh", "-c", f"for i in $(seq {leftovers}); do sleep 300 & done; wait"],
        start_new_session=True,
    )
    while len(Path(f"/proc/{root.pid}/task/{root.pid}/children").read_text().split()) < leftovers:
        time.sleep(0.01)
    me = identity(root.pid)
    assert me is not None
    start = kill.StopGuard.start
    if not guarded:
        kill.StopGuard.start = classmethod(lambda cls, finish: None)  # type: ignore[method-assign]
    try:
        began = time.perf_counter()
        kill.stop_tree(me, {me}, grace=1.0)
        spent = time.perf_counter() - began
    finally:
        kill.StopGuard.start = start  # type: ignore[method-assign]
        assert StopGuard.start is start
    root.wait()
    return spent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--write", type=Path)
    args = parser.parse_args()
    lines = ["| leftovers | unguarded (median) | guarded (median) | guarded / unguarded |",
             "| --- | --- | --- | --- |"]
    for leftovers in (1, 30, 300):
        plain, guarded = [], []
        for _ in range(args.rounds):  # alternated, so the machine's load falls on both alike
            plain.append(one_stop(leftovers, False))
            guarded.append(one_stop(leftovers, True))
        a, b = statistics.median(plain), statistics.median(guarded)
        lines.append(f"| {leftovers} | {a * 1000:.1f} ms | {b * 1000:.1f} ms | {b / a:.2f} |")
    text = "\n".join(lines)
    print(text)
    if args.write:
        args.write.write_text(
            "# Stop guardian\n\n`python bench/bench_stop_guard.py`"
            f" ({args.rounds} rounds each, one run):\n\n{text}\n"
        )


if __name__ == "__main__":
    main()
