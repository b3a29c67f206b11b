"""A real multi-threaded job for tests of cores in use and threads at once.

hashlib releases the GIL on buffers over 2 KiB, so the busy threads of this one process really
compute at once; the main thread only sleeps.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager

BUSY_THREADS = textwrap.dedent(
    """
    import hashlib, sys, threading, time
    busy, idle = int(sys.argv[1]), int(sys.argv[2])
    buf = b"x" * (1 << 20)
    def spin():
        while True:
            hashlib.sha256(buf).digest()
    for _ in range(busy):
        threading.Thread(target=spin, daemon=True).start()
    for _ in range(idle):
        threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
    print("ready", flush=True)
    time.sleep(60)
    """
)


def start_job(busy: int, idle: int = 0) -> subprocess.Popen[str]:
    """Start the job and return once its threads run."""
    job = subprocess.Popen(
        [sys.executable, "-c", BUSY_THREADS, str(busy), str(idle)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert job.stdout is not None and job.stdout.readline() == "ready\n"
    return job


@contextmanager
def busy_job(busy: int, idle: int = 0) -> Iterator[subprocess.Popen[str]]:
    """The job for the length of a with block, killed and reaped afterwards."""
    job = start_job(busy, idle)
    try:
        yield job
    finally:
        job.kill()
        job.wait()
