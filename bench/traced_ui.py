"""`swarmdeck ui` with tracemalloc on, for bench_soak.py --trace: the real app on the real
terminal driver, with a thread that writes what grew most since its first snapshot, by
traceback, to the file named by $SWARMDECK_TRACE_OUT every $SWARMDECK_TRACE_EVERY seconds
(the first snapshot after $SWARMDECK_TRACE_WARM seconds)."""

from __future__ import annotations

import os
import sys
import threading
import time
import tracemalloc

from swarmdeck.cli import main


def dump(out: str, warm: float, every: float) -> None:
    time.sleep(warm)
    first = tracemalloc.take_snapshot()
    began = time.monotonic()
    while True:
        time.sleep(every)
        grown = tracemalloc.take_snapshot().compare_to(first, "traceback")
        with open(out, "a") as report:
            traced = tracemalloc.get_traced_memory()[0] / (1 << 20)
            report.write(f"--- {(time.monotonic() - began) / 60:.1f} min since the first,"
                         f" traced {traced:.1f}M\n")
            for stat in grown[:15]:
                report.write(f"{stat.size_diff / 1024:+9.1f} KiB {stat.count_diff:+7d} blocks\n")
                report.writelines(f"      {line}\n" for line in stat.traceback.format(limit=10))
        del grown


if __name__ == "__main__":
    tracemalloc.start(10)
    threading.Thread(
        target=dump, daemon=True,
        args=(os.environ["SWARMDECK_TRACE_OUT"], float(os.environ["SWARMDECK_TRACE_WARM"]),
              float(os.environ["SWARMDECK_TRACE_EVERY"])),
    ).start()
    sys.exit(main(["ui"]))
