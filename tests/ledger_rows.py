"""One builder for ledger rows, so a test names only the columns its case is about."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from typing import Any

from swarmdeck.probes.host import local_host_name
from swarmdeck.probes.procs import own_identity
from swarmdeck.state import StateStore


def job_row(**values: Any) -> dict[str, Any]:
    """A running job on this host whose runner is this test process, with `values` on top
    (`argv` may be a list; it is stored as JSON)."""
    runner = own_identity()
    row: dict[str, Any] = {
        "label": "job",
        "host": local_host_name(),
        "state": "running",
        "argv": ["true"],
        "cwd": "/w",
        "booked": 1 << 20,
        "cap": 2 << 20,
        "runner_pid": runner.pid,
        "runner_start_ticks": runner.start_ticks,
        "created_at": time.time(),
        **values,
    }
    if not isinstance(row["argv"], str):
        row["argv"] = json.dumps(row["argv"])
    return row


def insert_job(conn: sqlite3.Connection, **values: Any) -> int:
    """Insert `job_row(**values)` on an open connection; the new row's id."""
    row = job_row(**values)
    cursor = conn.execute(
        f"INSERT INTO jobs ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})",
        tuple(row.values()),
    )
    return int(cursor.lastrowid or 0)


def add_job(store: StateStore, **values: Any) -> int:
    """Insert `job_row(**values)` in its own transaction; the new row's id."""
    with store.transaction() as conn:
        return insert_job(conn, **values)


def bytes_read() -> int:
    """The bytes this thread has read so far (rchar): a question to the ledger costs the
    difference, when asked on a connection that has read nothing yet."""
    for line in Path("/proc/thread-self/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    raise AssertionError("no rchar in /proc/thread-self/io")
