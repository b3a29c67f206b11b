"""A state file emptied, replaced, or cut off from its write-ahead log is refused in one line
(exit 251) and left as it is; it never silently becomes a new, empty ledger that forgets the
jobs still running and hands out their ids again. A brand-new state folder still sets up.

The ledger's id lives in the file (swarmdeck_meta) and, with the file's device and inode, in
`state.db.ledger` beside it; a store open by other processes (SQLite's shared lock on the
file) whose -wal or -shm is gone lost them under those processes.
"""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from one_command import SWARMDECK, one_line, swarmdeck
from swarmdeck.errors import StateError
from swarmdeck.exitcodes import ExitCode
from swarmdeck.ledger_mark import LEDGER_SUFFIX
from swarmdeck.state import StateStore

DEADLINE = 60.0


def _running_job(isolated_home: Path) -> subprocess.Popen[str]:
    """A caged `sleep` whose row is running; its runner keeps the store open."""
    started = isolated_home / "started"
    job = subprocess.Popen(
        [SWARMDECK, "run", "--label", "long", "--", "sh", "-c", f"touch {started}; sleep 60"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    deadline = time.monotonic() + DEADLINE
    while not started.exists():
        assert job.poll() is None, job.communicate()
        assert time.monotonic() < deadline, "the job never started"
        time.sleep(0.02)
    return job


def _stop(job: subprocess.Popen[str]) -> None:
    if job.poll() is None:
        job.send_signal(signal.SIGTERM)
    job.communicate(timeout=DEADLINE)


def _assert_refused(db: Path, before: dict[str, bytes]) -> None:
    for argv in (["run", "--", "true"], ["status", "--json"], ["watch", "--once"]):
        done = swarmdeck(*argv)
        assert done.returncode == ExitCode.USAGE, (argv, done.stdout, done.stderr)
        assert str(db) in one_line(done)
    assert _files(db.parent) == before, "the refused file was changed"


def _files(state: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in state.iterdir() if p.name.startswith("state.db")}


def _ledger_with_one_job(state: Path) -> Path:
    done = swarmdeck("run", "--", "true")
    assert done.returncode == 0, done.stderr
    assert (state / f"state.db{LEDGER_SUFFIX}").exists()
    return state / "state.db"


def test_a_state_file_truncated_under_a_running_job_is_refused(
    own_slice: Path, isolated_home: Path
) -> None:
    db = _ledger_with_one_job(isolated_home / "state")
    job = _running_job(isolated_home)
    try:
        os.truncate(db, 0)
        _assert_refused(db, _files(db.parent))
        assert "empty" in one_line(swarmdeck("run", "--", "true"))
    finally:
        _stop(job)


def test_a_log_and_index_deleted_under_a_running_job_are_refused(
    own_slice: Path, isolated_home: Path
) -> None:
    db = _ledger_with_one_job(isolated_home / "state")
    job = _running_job(isolated_home)
    try:
        os.unlink(f"{db}-wal")
        os.unlink(f"{db}-shm")
        _assert_refused(db, _files(db.parent))
        line = one_line(swarmdeck("run", "--", "true"))
        assert "write-ahead log" in line and str(job.pid) in line
    finally:
        _stop(job)


def test_a_log_deleted_under_a_running_job_is_refused_after_a_hook_made_a_new_one(
    own_slice: Path, isolated_home: Path
) -> None:
    """A hook call records through a plain SQLite connection, which makes a fresh -wal and
    -shm and leaves them: the running job's lost log is still told from them."""
    db = _ledger_with_one_job(isolated_home / "state")
    job = _running_job(isolated_home)
    try:
        os.unlink(f"{db}-wal")
        os.unlink(f"{db}-shm")
        hook = subprocess.run(
            [SWARMDECK, "hook", "stop"], input='{"session_id": "s", "hook_event_name": "Stop"}',
            capture_output=True, text=True, timeout=60,
        )
        assert hook.returncode == 0, hook.stderr
        assert os.path.exists(f"{db}-wal") and os.path.exists(f"{db}-shm")
        _assert_refused(db, _files(db.parent))
    finally:
        _stop(job)


SHARED_LOCK = "import fcntl, os, sys, time; fd = os.open(sys.argv[1], os.O_RDWR); " \
    "fcntl.lockf(fd, fcntl.LOCK_SH, 510, 0x40000002); print('held', flush=True); " \
    "time.sleep(float(sys.argv[2]))"
"""A process holding SQLite's shared lock on the state file and no index lock, as a connection
being made does until it reaches the -shm: argv is the file and how long to hold it."""


def test_a_connection_slow_to_reach_its_index_is_waited_for_not_refused(
    isolated_home: Path,
) -> None:
    """100 runs started at once on 2 cores once had one connection hold the file's lock over a
    second before its index: that is a store in use, not a log lost under its readers."""
    db = isolated_home / "state" / "state.db"
    StateStore(db).close()
    opening = subprocess.Popen(
        [sys.executable, "-c", SHARED_LOCK, str(db), "1.5"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert opening.stdout is not None and opening.stdout.readline() == "held\n"
        StateStore(db).close()
    finally:
        opening.wait(timeout=DEADLINE)


def test_a_state_file_truncated_with_nothing_running_is_refused(isolated_home: Path) -> None:
    db = isolated_home / "state" / "state.db"
    StateStore(db).close()
    os.truncate(db, 0)
    with pytest.raises(StateError, match=r"empty.*state\.db\.ledger"):
        StateStore(db)
    assert db.stat().st_size == 0


def test_a_state_file_removed_is_refused_while_its_ledger_mark_is_there(
    isolated_home: Path,
) -> None:
    db = isolated_home / "state" / "state.db"
    StateStore(db).close()
    db.unlink()
    with pytest.raises(StateError, match="missing"):
        StateStore(db)
    assert not db.exists()
    Path(f"{db}{LEDGER_SUFFIX}").unlink()  # what the line says to do to start a new ledger
    StateStore(db).close()


def test_another_ledgers_file_put_in_its_place_is_refused(tmp_path: Path) -> None:
    mine, theirs = tmp_path / "mine" / "state.db", tmp_path / "theirs" / "state.db"
    StateStore(mine).close()
    StateStore(theirs).close()
    shutil.copyfile(theirs, mine)
    with pytest.raises(StateError, match="another ledger"):
        StateStore(mine)


def test_a_new_state_folder_sets_up_and_marks_its_ledger(isolated_home: Path) -> None:
    db = isolated_home / "state" / "state.db"
    store = StateStore(db)
    ledger = store.ledger_id
    store.close()
    assert len(ledger) == 32
    mark = Path(f"{db}{LEDGER_SUFFIX}").read_text().split()
    status = db.stat()
    assert mark == [ledger, str(status.st_dev), str(status.st_ino)]
    again = StateStore(db)
    assert again.ledger_id == ledger
    again.close()


def test_a_store_made_before_ledger_ids_gets_one(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    StateStore(db).close()
    conn = sqlite3.connect(db)
    # Schema 10, as it was before ledger ids: without what steps 11 and on added.
    conn.execute("DELETE FROM swarmdeck_meta WHERE key = 'ledger_id'")
    conn.execute("DROP TABLE input_runs")
    conn.execute("ALTER TABLE jobs DROP COLUMN scope")
    conn.execute("DROP TABLE session_titles")
    conn.execute("DROP INDEX jobs_by_host_state")
    conn.execute("DROP INDEX jobs_by_cwd")
    conn.execute("DROP INDEX peaks_by_job")
    conn.execute("ALTER TABLE peaks DROP COLUMN peak_at")
    conn.execute("UPDATE swarmdeck_meta SET value = '10' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()
    Path(f"{db}{LEDGER_SUFFIX}").unlink()
    store = StateStore(db)
    assert len(store.ledger_id) == 32
    store.close()


@pytest.mark.parametrize("command", [("status",), ("kills",)])
@pytest.mark.parametrize("kind", ["a FIFO", "a directory"])
def test_a_mark_that_is_not_a_regular_file_is_one_line_and_exit_251(
    isolated_home: Path, command: tuple[str, ...], kind: str
) -> None:
    """A FIFO at `state.db.ledger` once hung every command in the open of the mark; it is
    read without blocking, and anything but a regular file there is refused, left as it is."""
    db = isolated_home / "state" / "state.db"
    StateStore(db).close()
    mark = Path(f"{db}{LEDGER_SUFFIX}")
    mark.unlink()
    if kind == "a FIFO":
        os.mkfifo(mark)
    else:
        mark.mkdir()
    done = swarmdeck(*command, timeout=60)
    assert done.returncode == ExitCode.USAGE, done.stderr
    line = one_line(done)
    assert str(mark) in line and f"it is {kind}, not a regular file" in line, line
    assert mark.exists() and not mark.is_file()
