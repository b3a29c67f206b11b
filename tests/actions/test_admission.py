"""Admission under contention: two runners deciding at once can never both take the same room."""

from __future__ import annotations

import contextlib
import threading
import time
from pathlib import Path

import pytest

from ledger_rows import insert_job
from swarmdeck.actions import admission
from swarmdeck.actions.booking import Booking, Decision, Via, decide_admission
from swarmdeck.ledger import rebook_queued
from swarmdeck.probes.memory_book import MemoryBook, SliceFacts
from swarmdeck.probes.procs import own_identity
from swarmdeck.state import StateStore

MIB = 1 << 20
SLICE_CAP = 100 * MIB


def job_row(booked: int) -> admission.JobRow:
    return admission.JobRow(
        label="contender", host="here", fingerprint="f", argv=["true"], cwd=Path("/"),
        runner=own_identity(), booking=Booking(booked, booked, Via.CAP, 0), threads=None,
        detached=False, timeout=None,
    )


def facts() -> SliceFacts:
    return SliceFacts(SLICE_CAP, MIB, "cgroup-v1", None, "configured", "")


@pytest.mark.parametrize("taking_turns", [True, False], ids=["with turns", "transaction alone"])
def test_two_runners_deciding_at_once_cannot_both_take_the_room(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, taking_turns: bool
) -> None:
    """Each decision is slowed down between reading the book and writing its row; the second
    must see the first's row.

    The turn lock only orders waiters; without it the one write transaction must still hold
    the book and the insert together (another writer of the state file takes no turn).
    """
    path = tmp_path / "state.db"
    StateStore(path).close()
    if not taking_turns:
        monkeypatch.setattr(admission, "admission_turn", lambda db, *_: contextlib.nullcontext())

    def slow_decision(booked: int, book: MemoryBook, queued_ahead: int = 0) -> Decision:
        decision = decide_admission(booked, book, queued_ahead)
        time.sleep(0.3)
        return decision

    monkeypatch.setattr(admission, "decide_admission", slow_decision)
    decisions: list[Decision] = []

    def contend() -> None:
        store = StateStore(path)
        decision, *_ = admission.attempt(
            store, job_row(60 * MIB), facts(), None, lambda job_id: tmp_path / str(job_id)
        )
        decisions.append(decision)
        store.close()

    threads = [threading.Thread(target=contend) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(d.value for d in decisions) == ["admit", "wait"]
    with StateStore(path).read() as conn:
        states = sorted(row[0] for row in conn.execute("SELECT state FROM jobs"))
    assert states == ["admitted", "queued"]


def test_a_dead_runners_row_is_marked_lost_in_the_same_decision(tmp_path: Path) -> None:
    store = StateStore(tmp_path / "state.db")
    with store.transaction() as conn:
        insert_job(conn, host="here", booked=SLICE_CAP, runner_start_ticks=1)
    decision, _, book, lost = admission.attempt(
        store, job_row(60 * MIB), facts(), None, lambda job_id: tmp_path / str(job_id)
    )
    assert decision is Decision.ADMIT
    assert [job.id for job in lost] == [1]
    assert book.not_yet_grown == 0


def test_a_small_job_does_not_cut_in_ahead_of_a_queued_big_one(tmp_path: Path) -> None:
    """Heavy jobs must not crawl because small ones keep taking the room they wait for."""
    store = StateStore(tmp_path / "state.db")

    def decide(booked: int, job_id: int | None = None) -> tuple[Decision, int]:
        decision, job_id, *_ = admission.attempt(
            store, job_row(booked), facts(), job_id, lambda job_id: tmp_path / str(job_id)
        )
        return decision, job_id

    running, holder = decide(60 * MIB)
    waiting, big = decide(80 * MIB)
    cutting_in, small = decide(30 * MIB)
    assert (running, waiting, cutting_in) == (Decision.ADMIT, Decision.WAIT, Decision.WAIT)

    with store.transaction() as conn:
        conn.execute("UPDATE jobs SET state = 'done', ended_at = 1 WHERE id = ?", (holder,))
    assert decide(30 * MIB, small)[0] is Decision.WAIT
    assert decide(80 * MIB, big)[0] is Decision.ADMIT
    with store.transaction() as conn:
        conn.execute("UPDATE jobs SET state = 'done', ended_at = 1 WHERE id = ?", (big,))
    assert decide(30 * MIB, small)[0] is Decision.ADMIT


def test_a_queued_job_booked_again_shows_its_new_booking_to_the_rest_of_the_queue(
    tmp_path: Path,
) -> None:
    """A queued runner books again while it waits (its folder's spread has shown, say): its
    row must say so, or every other runner orders and sums the queue on the old booking."""
    store = StateStore(tmp_path / "state.db")

    def decide(booking: Booking, job_id: int | None = None) -> int:
        row = admission.rebooked(job_row(booking.booked), booking)
        _, job_id, *_ = admission.attempt(
            store, row, facts(), job_id, lambda job_id: tmp_path / str(job_id)
        )
        return job_id

    def row() -> tuple[object, ...]:
        with store.read() as conn:
            return tuple(conn.execute(
                "SELECT state, booked, cap, admitted_via, oom_score_adj FROM jobs WHERE id = ?",
                (big,)).fetchone())

    holder = decide(Booking(60 * MIB, 60 * MIB, Via.CAP, 0))
    big = decide(Booking(88 * MIB, 200 * MIB, Via.HISTORY, 500))
    decide(Booking(82 * MIB, 200 * MIB, Via.FAMILY, 500), big)
    assert row() == ("queued", 82 * MIB, 200 * MIB, "family", 500)
    with store.transaction() as conn:
        assert not rebook_queued(conn, big, 82 * MIB, 200 * MIB, "family", 500), (
            "a row that already has the booking is not written at every look")
        conn.execute("UPDATE jobs SET state = 'done', ended_at = 1 WHERE id = ?", (holder,))
    decide(Booking(70 * MIB, 200 * MIB, Via.FAMILY, 500), big)
    assert row() == ("admitted", 70 * MIB, 200 * MIB, "family", 500), (
        "admitted on the booking it decided on")


def test_a_queued_runner_is_woken_the_moment_room_is_freed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its re-checks are an hour apart here: only the doorbell the ending job rings can wake
    it within the test's deadline."""
    from swarmdeck.actions.doorbell import folder_of, ring
    from waiting import wait_for

    monkeypatch.setattr(admission, "RECHECK_INTERVAL", 3600.0)
    monkeypatch.setattr(admission, "RECHECK_MAX", 3600.0)
    path = tmp_path / "state.db"
    store = StateStore(path)
    decision, holder, *_ = admission.attempt(
        store, job_row(60 * MIB), facts(), None, lambda job_id: tmp_path / str(job_id)
    )
    assert decision is Decision.ADMIT
    admitted: list[admission.Admission] = []

    def queue() -> None:
        waiter = StateStore(path)
        try:
            admitted.append(admission.admit(
                waiter, job_row(60 * MIB), facts(), lambda job_id: tmp_path / str(job_id),
                3600.0, lambda line: None,
            ))
        finally:
            waiter.close()

    thread = threading.Thread(target=queue, daemon=True)
    thread.start()
    folder = Path(folder_of(str(path)))
    wait_for(lambda: folder.is_dir() and any(folder.iterdir()))
    with store.transaction() as conn:
        conn.execute("UPDATE jobs SET state = 'done', ended_at = 1 WHERE id = ?", (holder,))
    assert ring(str(path)) == 1
    thread.join(timeout=60)
    assert not thread.is_alive() and [a.job_id for a in admitted] == [holder + 1]
    assert list(folder.iterdir()) == [], "the doorbell goes with the wait"
