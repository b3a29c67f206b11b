"""A queued runner's doorbell: rung when room is freed, and never taken for a dead runner's."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from swarmdeck.actions import doorbell
from swarmdeck.actions.doorbell import Doorbell, folder_of, ring


def test_a_bell_rung_while_it_is_being_hung_up_is_not_taken_for_a_dead_runners(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full run rang between the runner's mkfifo and its open: the FIFO had no reader yet, so
    the ringer removed it as a dead runner's, and the queued runner waited for its next
    re-check instead of the ring (tests/actions/test_admission.py, at a load of 10)."""
    db = str(tmp_path / "state.db")
    real_open = os.open
    rung: list[int] = []

    def open_after_a_ring(path: str, flags: int, *args: int) -> int:
        if flags & os.O_RDWR and not rung:
            rung.append(ring(db))
        return real_open(path, flags, *args)

    monkeypatch.setattr(doorbell.os, "open", open_after_a_ring)
    bell = Doorbell(db, 4242, 17)
    monkeypatch.setattr(doorbell.os, "open", real_open)
    try:
        assert rung == [0]
        assert ring(db) == 1
        bell.drain()
    finally:
        bell.close()
    assert os.listdir(folder_of(db)) == []


def test_a_bell_nobody_listens_to_is_removed_by_the_next_ring(tmp_path: Path) -> None:
    db = str(tmp_path / "state.db")
    bell = Doorbell(db, 4242, 17)
    os.close(bell.fd)
    assert ring(db) == 0
    assert os.listdir(folder_of(db)) == []
