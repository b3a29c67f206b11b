"""The least a caged run can cost in this interpreter: what bench_runner.py sets
`swarmdeck run` beside, so that its overhead splits into what Python and SQLite cost at all
and what swarmdeck's checks and modules add.

It does only the steps no caged run can skip, with nothing checked: one write transaction that
reads the active rows and books the job, a v1 cage with its limit, fork, the child moving
itself into the cage (`tasks`, as the runner does) and exec, the parent's wait, the peak read,
the cage removed, and one write transaction closing the row. No config, no state-file
verification, no admission rule, no fingerprint, no PID-reuse check, no parent-death signal,
no signal handling, no output file.

    python bench/floor_run.py STATE_DB SLICE_DIR COMMAND...
"""

import os
import sqlite3
import sys
import time


def main() -> int:
    database, slice_dir, *command = sys.argv[1:]
    db = sqlite3.connect(database, isolation_level=None)
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("PRAGMA synchronous = NORMAL")
    db.execute(
        "CREATE TABLE IF NOT EXISTS jobs (id INTEGER PRIMARY KEY, argv TEXT, state TEXT,"
        " booked INTEGER, started REAL, code INTEGER, peak INTEGER)"
    )
    db.execute("BEGIN IMMEDIATE")
    db.execute("SELECT SUM(booked) FROM jobs WHERE state = 'running'").fetchone()
    job = db.execute(
        "INSERT INTO jobs (argv, state, booked, started) VALUES (?, 'running', ?, ?)",
        (repr(command), 8 << 20, time.time()),
    ).lastrowid
    db.execute("COMMIT")
    cage = f"{slice_dir}/floor-{job}-{os.getpid()}"
    os.mkdir(cage)
    with open(f"{cage}/memory.limit_in_bytes", "w") as limit:
        limit.write(str(8 << 20))
    pid = os.fork()
    if pid == 0:
        fd = os.open(f"{cage}/tasks", os.O_WRONLY)
        os.write(fd, b"0")
        os.execvp(command[0], command)
    _, status = os.waitpid(pid, 0)
    with open(f"{cage}/memory.max_usage_in_bytes") as peak_file:
        peak = int(peak_file.read())
    os.rmdir(cage)
    code = os.waitstatus_to_exitcode(status)
    db.execute("BEGIN IMMEDIATE")
    db.execute("UPDATE jobs SET state = 'done', code = ?, peak = ? WHERE id = ?", (code, peak, job))
    db.execute("COMMIT")
    os._exit(code)


if __name__ == "__main__":
    sys.exit(main())
