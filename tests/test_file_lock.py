"""Taking a file lock within a deadline, against a lock held by another real process."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from swarmdeck.file_lock import take_within

HOLD = (
    "import fcntl,os,sys,time;fd=os.open(sys.argv[1],os.O_RDWR);fcntl.flock(fd,fcntl.LOCK_EX);"
    "print('held',flush=True);time.sleep(float(sys.argv[2]))"
)


@pytest.fixture
def lock_file(tmp_path: Path) -> Path:
    path = tmp_path / "decision.lock"
    path.touch()
    return path


@pytest.fixture
def fd(lock_file: Path) -> Iterator[int]:
    handle = os.open(lock_file, os.O_RDWR)
    yield handle
    os.close(handle)


def hold(lock_file: Path, seconds: float) -> subprocess.Popen[str]:
    """Another process holding the lock for `seconds`, returned once it holds it."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(lock_file), str(seconds)], stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    return holder


def held_by_me(lock_file: Path) -> bool:
    other = os.open(lock_file, os.O_RDWR)
    try:
        fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(other)
    return False


def test_a_free_lock_is_taken_without_a_pause(lock_file: Path, fd: int) -> None:
    pauses: list[float] = []
    assert take_within(fd, 1.0, pauses.append)
    assert pauses == []
    assert held_by_me(lock_file)


def test_a_lock_held_past_the_wait_is_not_taken(lock_file: Path, fd: int) -> None:
    holder = hold(lock_file, 30)
    try:
        started = time.monotonic()
        assert not take_within(fd, 0.3, first=0.01, most=0.04)
        assert 0.3 <= time.monotonic() - started < 5
    finally:
        holder.kill()
        holder.wait()


def test_pauses_double_up_to_the_most(lock_file: Path, fd: int) -> None:
    holder = hold(lock_file, 30)
    pauses: list[float] = []
    try:
        assert not take_within(fd, 1.0, lambda s: (pauses.append(s), time.sleep(s)), 0.01, 0.04)
    finally:
        holder.kill()
        holder.wait()
    assert pauses[:4] == [0.01, 0.02, 0.04, 0.04]
    assert max(pauses) == 0.04


def test_a_lock_its_holder_lets_go_of_is_taken_within_the_wait(lock_file: Path, fd: int) -> None:
    holder = hold(lock_file, 0.2)
    try:
        assert take_within(fd, 10.0)
        assert held_by_me(lock_file)
    finally:
        holder.wait()


def test_a_pause_that_raises_ends_the_wait_without_the_lock(lock_file: Path, fd: int) -> None:
    holder = hold(lock_file, 30)

    def stopped(_seconds: float) -> None:
        raise InterruptedError("stopped")

    try:
        with pytest.raises(InterruptedError):
            take_within(fd, 10.0, stopped)
    finally:
        holder.kill()
        holder.wait()
    assert not held_by_me(lock_file)
