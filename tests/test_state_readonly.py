"""A state file or folder that cannot be written ends `run` and `watch` with one line and exit
251 ("cannot set up"), never a traceback, and nothing runs.

Root ignores mode bits, so the file is made read-only the ways root cannot ignore: the
immutable flag (`chattr +i`, removed again whatever happens) and a read-only bind mount of the
test's own state folder (unmounted whatever happens). Each case is tried with the store's
write-ahead log and index beside it (a run ends without closing its store, so they stay) and
without them (a command that closes the last connection removes them).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from one_command import SWARMDECK, one_line, swarmdeck
from swarmdeck.exitcodes import ExitCode


@contextlib.contextmanager
def immutable(path: Path) -> Iterator[None]:
    made = subprocess.run(["chattr", "+i", str(path)], capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip(f"chattr +i does not work here: {made.stderr.strip()}")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True)


@contextlib.contextmanager
def read_only_mount(folder: Path) -> Iterator[None]:
    bound = subprocess.run(["mount", "--bind", str(folder), str(folder)], capture_output=True,
                           text=True)
    if bound.returncode != 0:
        pytest.skip(f"cannot bind-mount here: {bound.stderr.strip()}")
    try:
        subprocess.run(["mount", "-o", "remount,bind,ro", str(folder)], check=True)
        yield
    finally:
        subprocess.run(["umount", str(folder)], check=True)


def _ledger(state: Path, with_log: bool) -> Path:
    """A state folder with one finished job; with or without its -wal and -shm beside it."""
    done = swarmdeck("run", "--", "true")
    assert done.returncode == 0, done.stderr
    db = state / "state.db"
    if not with_log:
        last = sqlite3.connect(db)
        last.execute("SELECT COUNT(*) FROM jobs").fetchone()
        last.close()  # the last connection: checkpoints, removes -wal and -shm
        assert not (state / "state.db-wal").exists()
    else:
        assert (state / "state.db-wal").exists()
    return db


def _job_count(db: Path) -> int:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return int(conn.execute("SELECT COUNT(*) FROM jobs").fetchone()[0])
    finally:
        conn.close()


def _assert_refused(db: Path, marker: Path, watch: bool = True) -> None:
    ran = swarmdeck("run", "--", "touch", str(marker))
    assert ran.returncode == ExitCode.USAGE, ran.stderr
    assert "state" in one_line(ran)
    assert not marker.exists(), "the job ran although nothing could be recorded"
    if not watch:
        return
    watched = swarmdeck("watch", "--once")
    assert watched.returncode == ExitCode.USAGE, watched.stderr
    assert "state" in one_line(watched)


@pytest.mark.parametrize("with_log", [True, False], ids=["with-wal", "without-wal"])
def test_an_immutable_state_file_is_one_line_and_exit_251(
    own_slice: Path, isolated_home: Path, with_log: bool
) -> None:
    state = isolated_home / "state"
    db = _ledger(state, with_log)
    holder = sqlite3.connect(db) if with_log else None  # keeps -wal and -shm there
    if holder is not None:
        holder.execute("SELECT COUNT(*) FROM jobs").fetchone()
    try:
        with immutable(db):
            _assert_refused(db, isolated_home / "ran")
    finally:
        if holder is not None:
            holder.close()
    assert _job_count(db) == 1


def test_an_immutable_write_ahead_log_is_one_line_and_exit_251(
    own_slice: Path, isolated_home: Path
) -> None:
    state = isolated_home / "state"
    db = _ledger(state, with_log=True)
    holder = sqlite3.connect(db)
    holder.execute("SELECT 1 FROM jobs").fetchall()
    try:
        with immutable(state / "state.db-wal"):
            _assert_refused(db, isolated_home / "ran")
    finally:
        holder.close()


@pytest.mark.parametrize("with_log", [True, False], ids=["with-wal", "without-wal"])
def test_an_immutable_state_folder_is_one_line_and_exit_251(
    own_slice: Path, isolated_home: Path, with_log: bool
) -> None:
    state = isolated_home / "state"
    db = _ledger(state, with_log)
    if with_log:
        # The store can still write through the log it finds (so `watch` works); a run's
        # admission lock cannot be made.
        os.unlink(state / "state.db.admission")
    with immutable(state):
        _assert_refused(db, isolated_home / "ran", watch=not with_log)


@pytest.mark.parametrize("with_log", [True, False], ids=["with-wal", "without-wal"])
def test_a_read_only_mount_of_the_state_folder_is_one_line_and_exit_251(
    own_slice: Path, isolated_home: Path, with_log: bool
) -> None:
    state = isolated_home / "state"
    db = _ledger(state, with_log)
    with read_only_mount(state):
        _assert_refused(db, isolated_home / "ran")
    assert _job_count(db) == 1


def test_a_state_file_made_immutable_under_a_running_job_is_one_line_and_its_own_status(
    own_slice: Path, isolated_home: Path
) -> None:
    """The job already ran: its runner says in one line that its end was not recorded, and
    exits with the job's own status, as for any store that fails under it."""
    state = isolated_home / "state"
    db = _ledger(state, with_log=True)
    started, go = isolated_home / "started", isolated_home / "go"
    job = subprocess.Popen(
        [SWARMDECK, "run", "--", "sh", "-c",
         f"touch {started}; while [ ! -e {go} ]; do sleep 0.02; done; exit 3"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not started.exists():
            assert job.poll() is None and time.monotonic() < deadline, job.communicate()
            time.sleep(0.02)
        with immutable(db), immutable(state / "state.db-wal"):
            go.touch()
            _, stderr = job.communicate(timeout=60)
    finally:
        if job.poll() is None:
            job.kill()
            job.communicate()
    assert job.returncode == 3, stderr
    lines = stderr.strip().splitlines()
    assert "Traceback" not in stderr and len(lines) == 1, stderr
    assert "not recorded" in lines[0] and str(db) in lines[0]
