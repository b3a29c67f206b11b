"""The read side of locks and owners: parsing, the stale-or-held judgement, who uses a folder."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from swarmdeck.probes import locks
from swarmdeck.probes.procs import own_identity

HOLDER = locks.LockHolder("/w/repo", 4242, 777, "s1", "make", 1700000000.0)


def test_lock_record_round_trips() -> None:
    assert locks.parse_lock(HOLDER.to_text()) == HOLDER


@pytest.mark.parametrize(
    "text",
    [
        "",
        "{",
        "null",
        '{"pid": "12", "start_ticks": 1, "since": 1}',
        '{"pid": 12, "start_ticks": true, "since": 1}',
        '{"pid": 12, "start_ticks": 1}',
        '{"pid": 12, "start_ticks": 1, "since": 1, "session": 5}',
    ],
)
def test_incomplete_lock_records_are_rejected(text: str) -> None:
    with pytest.raises(ValueError):
        locks.parse_lock(text)


def test_only_the_exact_start_ticks_keep_a_lock_held() -> None:
    assert locks.judge(HOLDER, 777) == (locks.HELD, "")
    state, reason = locks.judge(HOLDER, 778)
    assert state == locks.STALE and "another process" in reason
    state, reason = locks.judge(HOLDER, None)
    assert state == locks.STALE and "gone" in reason


def test_a_pid_that_exists_but_cannot_be_read_keeps_the_lock_held() -> None:
    state, reason = locks.judge(HOLDER, locks.UNREADABLE)
    assert state == locks.HELD and "another user's" in reason
    shown = locks.LockState(Path("x.lock"), state, HOLDER, reason).describe()
    assert shown.startswith("held by session s1, process 4242") and "cannot be checked" in shown


def test_current_start_ticks_of_a_live_and_a_gone_pid() -> None:
    me = own_identity()
    assert locks.current_start_ticks(me.pid) == me.start_ticks
    gone = subprocess.Popen(["true"])
    gone.wait()
    assert locks.current_start_ticks(gone.pid) is None


def test_missing_lock_file_is_free(tmp_path: Path) -> None:
    assert locks.read_lock(tmp_path, directory=tmp_path / "locks").state == locks.FREE


def test_own_live_lock_reads_held(tmp_path: Path) -> None:
    me = own_identity()
    lock_file = locks.lock_file_for(tmp_path, tmp_path)
    lock_file.write_text(
        locks.LockHolder(str(tmp_path), me.pid, me.start_ticks, "s", "c", 1.0).to_text()
    )
    state = locks.read_lock_file(lock_file)
    assert state.state == locks.HELD and state.to_json()["pid"] == me.pid


def test_owner_file_problems_are_named(tmp_path: Path) -> None:
    assert locks.read_owner(tmp_path) == (None, "no owner file")
    (tmp_path / locks.OWNER_FILE).write_text('{"session": "", "created_at": 1, "purpose": ""}')
    owner, problem = locks.read_owner(tmp_path)
    assert owner is None and "garbage" in problem


def test_processes_using_sees_cwd_inside_a_folder(tmp_path: Path) -> None:
    inner = tmp_path / "a" / "deep"
    inner.mkdir(parents=True)
    (tmp_path / "ab").mkdir()
    proc = subprocess.Popen(["sleep", "60"], cwd=inner)
    try:
        users = locks.processes_using([tmp_path / "a", tmp_path / "ab"])
    finally:
        proc.kill()
        proc.wait()
    assert proc.pid in users.by_directory[str(tmp_path / "a")]
    assert proc.pid not in users.by_directory[str(tmp_path / "ab")]
