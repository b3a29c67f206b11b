"""EASY backfill: a job starts ahead of a bigger waiting one only when that never delays it."""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from ledger_rows import insert_job
from swarmdeck.actions import admission
from swarmdeck.actions.backfill import LONGEST_FIRST_WITHIN, Holder, Waiter, holder_end, may_start
from swarmdeck.actions.booking import Booking, Decision, Via
from swarmdeck.probes.memory_book import SliceFacts
from swarmdeck.probes.procs import own_identity
from swarmdeck.state import StateStore

GIB = 1 << 30
MIB = 1 << 20


def test_a_short_job_starts_ahead_of_the_head_when_it_ends_before_the_head_fits() -> None:
    """10G: a running job holds 6G for 10 s more; the head needs 8G (room 4G)."""
    running = [Holder(6 * GIB, 10.0)]
    head = [Waiter(8 * GIB, 30.0)]
    assert may_start(Waiter(3 * GIB, 5.0), head, running, 4 * GIB)
    assert not may_start(Waiter(3 * GIB, 20.0), head, running, 4 * GIB), "it would hold 3G of 8G"
    assert may_start(Waiter(2 * GIB, 20.0), head, running, 4 * GIB), "2G are left beside the head"
    assert not may_start(Waiter(3 * GIB, None), head, running, 4 * GIB), "no history: in order"


def test_with_no_end_known_a_job_starts_only_where_no_order_of_ends_lets_the_head_in_sooner(
) -> None:
    """10G, the head needs 8G, 4G are free, and no running job's end is known. Beside one
    job of 6G, a 1G job of no history starts: whenever that job ends, 9G are free and the
    head starts then, as it would have. Beside jobs of 4.5G and 1.5G it waits: should the
    4.5G one end first, the head would start then without it, and with it not until later."""
    head = [Waiter(8 * GIB, 30.0)]
    assert may_start(Waiter(GIB, None), head, [Holder(6 * GIB, None)], 4 * GIB)
    two = [Holder(9 * GIB // 2, None), Holder(3 * GIB // 2, None)]
    assert not may_start(Waiter(GIB, None), head, two, 4 * GIB)
    assert not may_start(Waiter(3 * GIB, None), head, [Holder(6 * GIB, None)], 4 * GIB), (
        "3G beside the head leave it 7G when the 6G job ends"
    )


@pytest.mark.parametrize("scale", [1, 100, 1000])
def test_a_head_whose_lack_one_end_frees_exactly_is_kept_at_any_size(scale: int) -> None:
    """Room is counted in steps of a share of what the head lacks, so the check costs the same
    on any slice; rounding never lets a job in where one end would free exactly what the head
    lacks, or a MiB more, and lets one in where that end frees the job's room too."""
    head = [Waiter(8 * GIB * scale, None)]
    room = 4 * GIB * scale
    for frees in (4 * GIB * scale, 4 * GIB * scale + MIB):
        assert not may_start(Waiter(GIB * scale, None), head, [Holder(frees, None)], room)
    enough = [Holder(5 * GIB * scale + MIB, None)]
    assert may_start(Waiter(GIB * scale, None), head, enough, room)
    assert holder_end(12.0, 10.0) == 0.0, "a job past its shortest run may end any moment"
    assert holder_end(12.0, None) is None
    assert holder_end(4.0, 10.0) == 6.0


def test_room_beside_the_head_is_never_room_a_job_past_its_runs_still_holds() -> None:
    """14G: a job holds 6G past its shortest run (it may end any moment) and past its longest
    run times SLACK (no end is sure); another holds 4G for 30 s more. The head needs 8G (room
    4G). Counting the 6G job's earliest end, a 2G job of 20 s would fit beside the head at
    once; but that job may run on, the 4G one's end would then let the head in, and the 2G
    job would hold 2G of it: it waits. With the 6G job sure to have ended soon, the same job
    leaves the head its room: it starts."""
    from swarmdeck.actions.backfill import SLACK, holder_sure_end

    head = [Waiter(8 * GIB, 30.0)]
    job = Waiter(2 * GIB, 20.0)
    assert 10.0 * SLACK < 13.0 and holder_sure_end(13.0, 10.0) is None
    running = [Holder(6 * GIB, holder_end(13.0, 10.0)), Holder(4 * GIB, 30.0)]
    assert not may_start(job, head, running, 4 * GIB,
                         [Holder(6 * GIB, None), Holder(4 * GIB, 40.0)])
    running = [Holder(6 * GIB, holder_end(12.0, 10.0)), Holder(4 * GIB, 30.0)]
    assert may_start(job, head, running, 4 * GIB,
                     [Holder(6 * GIB, holder_sure_end(12.0, 10.0)), Holder(4 * GIB, 40.0)])
    assert holder_sure_end(12.0, 10.0) == 10.0 * SLACK - 12.0
    assert holder_sure_end(0.0, None) is None


def test_with_no_head_waiting_the_rule_is_the_queue_order() -> None:
    ahead = [Waiter(GIB, None), Waiter(GIB, None)]
    assert may_start(Waiter(GIB, None), ahead, [], 3 * GIB)
    assert not may_start(Waiter(2 * GIB, None), ahead, [], 3 * GIB)


@dataclass
class Job:
    booked: int
    runs: float


def simulate(
    jobs: list[Job], total: int, backfill: bool, known: bool = True,
) -> dict[int, float]:
    """Start times when every job is queued at 0 in this order and each runs exactly its
    duration; queued jobs decide in order at every start and end, as runners woken do. With
    `known` false the rule is told no job's run time, as on a day with no history."""
    now, running, queued, starts = 0.0, [], list(range(len(jobs))), {}
    while queued:
        started = True
        while started:
            started = False
            for place, index in enumerate(queued):
                job = jobs[index]
                usable = total - sum(jobs[i].booked for _, i in running)
                ahead = [Waiter(jobs[i].booked, jobs[i].runs if known else None)
                         for i in queued[:place]]
                holders = [Holder(jobs[i].booked, end - now if known else None)
                           for end, i in running]
                own = Waiter(job.booked, job.runs if known else None)
                fits = (
                    may_start(own, ahead, holders, usable) if backfill
                    else job.booked + sum(w.booked for w in ahead) <= usable
                )
                if fits:
                    starts[index] = now
                    running.append((now + job.runs, index))
                    queued.remove(index)
                    started = True
                    break
        if queued:
            now = min(end for end, _ in running)
            running = [(end, i) for end, i in running if end > now]
    return starts


@pytest.mark.parametrize(("known", "least"), [(True, 100), (False, 50)],
                         ids=["run times known", "no run time known"])
def test_backfill_never_delays_the_head_jobs_start(known: bool, least: int) -> None:
    """Random queues of a slice of 10, the rule told each job's run time or (a first day)
    none: a big job queued behind running ones starts no later with backfill than in strict
    order, and backfill does start jobs earlier."""
    rng = random.Random(34)
    earlier = 0
    for _ in range(400):
        jobs = [
            Job(rng.choice([rng.randint(1, 3), rng.randint(5, 9)]) * GIB,
                float(rng.randint(1, 20)))
            for _ in range(rng.randint(3, 12))
        ]
        in_order = simulate(jobs, 10 * GIB, backfill=False)
        backfilled = simulate(jobs, 10 * GIB, backfill=True, known=known)
        heads = [i for i, start in in_order.items() if start > 0][:1]
        for head in heads:
            assert backfilled[head] <= in_order[head], (jobs, head)
        earlier += sum(backfilled[i] < in_order[i] for i in in_order)
    assert earlier > least


def test_admission_backfills_a_short_job_with_history_and_keeps_a_long_one_waiting(
    tmp_path: Path,
) -> None:
    """The ledger as the runners leave it: a job holds 60M of 100M with a learned 10 s; the
    head wants 80M, queued before the newcomers came (longer ago than LONGEST_FIRST_WITHIN:
    arriving with it, the long one would go first). A 30M job that ran 2 s starts; one that
    ran 60 s waits."""
    store = StateStore(tmp_path / "state.db")
    facts = SliceFacts(100 * MIB, MIB, "cgroup-v1", None, "configured", "")
    runner = own_identity()
    with store.transaction() as conn:
        insert_job(conn, host="here", booked=60 * MIB, fingerprint="holder", state="running",
                   started_at=conn.execute("SELECT unixepoch('subsec')").fetchone()[0])
        insert_job(conn, host="here", booked=80 * MIB, fingerprint="head", state="queued",
                   created_at=time.time() - LONGEST_FIRST_WITHIN - 5)
        for workload, seconds in (("holder", 10.0), ("short", 2.0), ("long", 60.0)):
            conn.execute(
                "INSERT INTO peaks (fingerprint, peak, duration) VALUES (?, ?, ?)",
                (workload, 30 * MIB, seconds),
            )

    def decide(workload: str) -> Decision:
        row = admission.JobRow(
            label=workload, host="here", fingerprint=workload, argv=["true"], cwd=Path("/"),
            runner=runner, booking=Booking(30 * MIB, 30 * MIB, Via.HISTORY, 500),
            threads=None, detached=False, timeout=None,
        )
        decision, *_ = admission.attempt(store, row, facts, None, lambda i: tmp_path / str(i))
        return decision

    assert decide("long") is Decision.WAIT
    assert decide("short") is Decision.ADMIT


def test_admission_lets_a_job_of_no_history_beside_a_head_whose_start_it_cannot_delay(
    tmp_path: Path,
) -> None:
    """100M (1M kept back), nothing learned: a job holds 60M; the head wants 50M (39M free).
    A 30M job starts: when the 60M job ends, 69M are free, enough for both. Where 30M and
    30M are held and the head wants 60M, a 20M job waits: either end alone would let the
    head in without it, and with it not."""
    store = StateStore(tmp_path / "state.db")
    facts = SliceFacts(100 * MIB, MIB, "cgroup-v1", None, "configured", "")
    runner = own_identity()
    with store.transaction() as conn:
        clock = time.time()
        holder = insert_job(conn, host="here", booked=60 * MIB, fingerprint="holder",
                            state="running", started_at=clock)
        head = insert_job(conn, host="here", booked=50 * MIB, fingerprint="head",
                          state="queued", created_at=clock - 1)

    def decide(workload: str, booked: int) -> Decision:
        row = admission.JobRow(
            label=workload, host="here", fingerprint=workload, argv=["true"], cwd=Path("/"),
            runner=runner, booking=Booking(booked, booked, Via.DEFAULT, 500),
            threads=None, detached=False, timeout=None,
        )
        decision, *_ = admission.attempt(store, row, facts, None, lambda i: tmp_path / str(i))
        return decision

    assert decide("newcomer", 30 * MIB) is Decision.ADMIT
    with store.transaction() as conn:
        conn.execute("DELETE FROM jobs WHERE fingerprint = 'newcomer'")
        conn.execute("UPDATE jobs SET booked = ? WHERE id = ?", (30 * MIB, holder))
        conn.execute("UPDATE jobs SET booked = ? WHERE id = ?", (60 * MIB, head))
        insert_job(conn, host="here", booked=30 * MIB, fingerprint="second", state="running",
                   started_at=clock)
    assert decide("newcomer", 20 * MIB) is Decision.WAIT


def test_the_queue_plan_says_what_each_job_waits_for_and_when_it_starts() -> None:
    """10G: a job holds 6G for 10 s more. Queued: a head of 8G (20 s), a 3G job of 30 s that
    would outlast the head's start, a 2G job of 5 s that ends before it."""
    from swarmdeck.actions.backfill import queue_plan

    plan = queue_plan(
        [Waiter(8 * GIB, 20.0), Waiter(3 * GIB, 30.0), Waiter(2 * GIB, 5.0)],
        [Holder(6 * GIB, 10.0)], 4 * GIB,
    )
    head, long_one, short = plan
    assert (head.place, head.waits_for, head.starts_in) == (1, "room", 10.0)
    assert long_one.waits_for.startswith("the head (place 1)") and long_one.starts_in == 30.0
    assert short.waits_for.startswith("nothing") and short.starts_in == 0.0
    unknown = queue_plan([Waiter(8 * GIB, 20.0)], [Holder(6 * GIB, None)], 4 * GIB)
    assert unknown[0].starts_in is None


def test_a_queued_jobs_detail_names_its_place_from_the_ledger(tmp_path: Path) -> None:
    from swarmdeck.actions.admission import planned_queue
    from swarmdeck.app.detail import job_facts, queue_text
    from swarmdeck.probes.memory_book import ledger_jobs

    store = StateStore(tmp_path / "state.db")
    with store.transaction() as conn:
        insert_job(conn, host="here", booked=60 * MIB, fingerprint="holder", state="running",
                   started_at=conn.execute("SELECT unixepoch('subsec')").fetchone()[0])
        queued = insert_job(conn, host="here", booked=80 * MIB, fingerprint="big",
                            state="queued")
        conn.execute("INSERT INTO peaks (fingerprint, peak, duration) VALUES ('holder', 1, 60)")
    jobs = list(ledger_jobs(store, "here"))
    spots = planned_queue(store, "here", jobs, 40 * MIB, 100 * MIB)
    text = queue_text(spots[queued], len(spots))
    assert text.startswith("place 1 of 1; waits for room; expected start in about ")
    job = next(j for j in jobs if j.id == queued)
    assert "queue  place 1 of 1" in job_facts(job, 0.0, 200, queue=text).plain


def test_the_queue_puts_the_longest_known_runs_first_among_jobs_that_arrive_together() -> None:
    """With a run time unknown, no order can be played forward: the first, longest first."""
    from swarmdeck.actions.backfill import ORDERS, Queued, queue_key, queue_order

    arrived = [Queued(100.0, GIB, 2.0, 1), Queued(100.5, GIB, 60.0, 2),
               Queued(101.0, GIB, None, 3), Queued(100.2, GIB, 30.0, 4)]
    order = queue_order(arrived, [], 10 * GIB)
    assert [arrived[place].job_id for place in order] == [2, 4, 1, 3]
    for advance in ORDERS:
        late = Queued(100.0 + LONGEST_FIRST_WITHIN + 1, 10 * GIB, 10 * LONGEST_FIRST_WITHIN, 9)
        assert queue_key(late, 10 * GIB, advance) > queue_key(arrived[2], 10 * GIB, advance), (
            f"{advance.__name__}: no job is passed by one that came that much later")


def test_jobs_that_arrive_together_go_in_the_order_their_runs_say_ends_soonest() -> None:
    """10G, nothing running. Two 4G jobs that run 5 s and two 6G jobs that run 4 s arrive
    together. Longest first starts the 4G pair, then the 6G jobs one after the other, as two
    never fit together: the queue ends at 16.25 s by the learned runs (times SLACK). The 6G
    jobs first, each with a 4G one beside it, end it at 12.5 s: that order is taken."""
    from swarmdeck.actions.backfill import Queued, queue_order, queue_plan, waiter_run

    small = [Queued(100.0, 4 * GIB, 5.0, job_id) for job_id in (1, 2)]
    big = [Queued(100.0, 6 * GIB, 4.0, job_id) for job_id in (3, 4)]
    queued = [*small, *big]

    def last_end(order: list[int]) -> float:
        waiters = [Waiter(queued[i].booked, waiter_run(queued[i].longest)) for i in order]
        return max(spot.starts_in + waiter.runs_for
                   for spot, waiter in zip(queue_plan(waiters, [], 10 * GIB), waiters, strict=True))

    assert last_end([0, 1, 2, 3]) == pytest.approx(16.25)
    order = queue_order(queued, [], 10 * GIB)
    assert [queued[place].job_id for place in order] == [3, 4, 1, 2]
    assert last_end(order) == pytest.approx(12.5)
    assert queue_order(queued, [], 10 * GIB, plan=False) == [0, 1, 2, 3], (
        "a job that cannot start now is not worth playing the orders forward for")
    unknown = [*queued[:3], Queued(100.0, 6 * GIB, None, 4)]
    assert queue_order(unknown, [], 10 * GIB) == [0, 1, 2, 3]


def test_a_queue_too_long_to_play_forward_under_the_lock_is_longest_first() -> None:
    """Playing an order forward costs more than the square of the queue's length, and every
    runner whose job fits pays it under the admission lock: past PLAN_AT_MOST jobs the queue
    is longest first, as the same four jobs behind a crowd of later, shorter ones show."""
    from swarmdeck.actions.backfill import PLAN_AT_MOST, Queued, queue_order

    four = [Queued(100.0, 4 * GIB, 5.0, 1), Queued(100.0, 4 * GIB, 5.0, 2),
            Queued(100.0, 6 * GIB, 4.0, 3), Queued(100.0, 6 * GIB, 4.0, 4)]
    crowd = [Queued(101.0, GIB // 8, 1.0, job_id) for job_id in range(5, PLAN_AT_MOST + 1)]
    assert queue_order([*four, *crowd], [], 10 * GIB)[:4] == [2, 3, 0, 1]
    longer = [*crowd, Queued(101.0, GIB // 8, 1.0, PLAN_AT_MOST + 1)]
    assert queue_order([*four, *longer], [], 10 * GIB)[:4] == [0, 1, 2, 3]


def test_admission_starts_a_long_job_ahead_of_a_short_one_queued_together(
    tmp_path: Path,
) -> None:
    """100M: a job of no known end holds 60M; a 30M job that ran 2 s is queued. A 30M job
    that ran 60 s arrives: it goes first (longest first), where in arrival order it waited
    behind the short one; one that arrived over LONGEST_FIRST_WITHIN later would not."""
    store = StateStore(tmp_path / "state.db")
    facts = SliceFacts(100 * MIB, MIB, "cgroup-v1", None, "configured", "")
    runner = own_identity()
    with store.transaction() as conn:
        clock = time.time()
        insert_job(conn, host="here", booked=60 * MIB, fingerprint="holder", state="running",
                   started_at=clock)
        short = insert_job(conn, host="here", booked=30 * MIB, fingerprint="short",
                           state="queued", created_at=clock)
        for workload, seconds in (("short", 2.0), ("long", 60.0), ("longer", 2000.0)):
            conn.execute(
                "INSERT INTO peaks (fingerprint, peak, duration) VALUES (?, ?, ?)",
                (workload, 30 * MIB, seconds),
            )

    def decide(workload: str) -> Decision:
        row = admission.JobRow(
            label=workload, host="here", fingerprint=workload, argv=["true"], cwd=Path("/"),
            runner=runner, booking=Booking(30 * MIB, 30 * MIB, Via.HISTORY, 500),
            threads=None, detached=False, timeout=None,
        )
        decision, *_ = admission.attempt(store, row, facts, None, lambda i: tmp_path / str(i))
        return decision

    with store.transaction() as conn:
        conn.execute("UPDATE jobs SET created_at = ? WHERE id = ?",
                     (clock - LONGEST_FIRST_WITHIN - 5, short))
    assert decide("longer") is Decision.WAIT, "the short job came too long before it"
    with store.transaction() as conn:
        conn.execute("UPDATE jobs SET created_at = ? WHERE id = ?", (clock, short))
        conn.execute("DELETE FROM jobs WHERE fingerprint = 'longer'")
    assert decide("long") is Decision.ADMIT


def test_admission_and_the_queue_shown_take_the_order_that_ends_the_queue_soonest(
    tmp_path: Path,
) -> None:
    """100M (1M kept back), nothing running. Queued together: two 40M jobs that ran 5 s, then
    two 55M jobs that ran 4 s. Longest first, the first 55M job waits behind the 40M pair;
    the queue ends sooner with the 55M jobs first, each beside a 40M one, so it starts, and
    the control room shows it at place 1. Where one job's run time is not known, the queue
    is longest first again, and it waits."""
    store = StateStore(tmp_path / "state.db")
    facts = SliceFacts(100 * MIB, MIB, "cgroup-v1", None, "configured", "")
    clock = time.time()
    with store.transaction() as conn:
        for workload, booked, seconds in (("small", 40, 5.0), ("big", 55, 4.0)):
            conn.execute("INSERT INTO peaks (fingerprint, peak, duration) VALUES (?, ?, ?)",
                         (workload, booked * MIB, seconds))
        ids = {
            name: insert_job(conn, host="here", booked=booked * MIB, fingerprint=workload,
                             state="queued", created_at=clock)
            for name, workload, booked in (("c", "small", 40), ("d", "small", 40),
                                           ("a", "big", 55), ("b", "other", 55))
        }
    row = admission.JobRow(
        label="a", host="here", fingerprint="big", argv=["true"], cwd=Path("/"),
        runner=own_identity(), booking=Booking(55 * MIB, 55 * MIB, Via.HISTORY, 500),
        threads=None, detached=False, timeout=None,
    )
    decision, *_ = admission.attempt(store, row, facts, ids["a"], lambda i: tmp_path / str(i))
    assert decision is Decision.WAIT, "the fourth job's run time is not known"

    from swarmdeck.actions.admission import planned_queue
    from swarmdeck.probes.memory_book import ledger_jobs

    with store.transaction() as conn:
        conn.execute("UPDATE jobs SET fingerprint = 'big' WHERE id = ?", (ids["b"],))
    spots = planned_queue(store, "here", list(ledger_jobs(store, "here")), 99 * MIB,
                           99 * MIB)
    assert [spots[ids[name]].place for name in "abcd"] == [1, 2, 3, 4]
    decision, *_ = admission.attempt(store, row, facts, ids["a"], lambda i: tmp_path / str(i))
    assert decision is Decision.ADMIT


def test_between_two_changes_every_look_takes_the_same_order() -> None:
    """10G: jobs of 6G and 1G run, learned to end 8 s and 10 s after the three queued jobs
    came. Played forward from then, the 3G job goes first. Two seconds on, with nothing
    started or ended, the same play from that moment would put the 8G job first and the 3G
    one behind it. The order is taken as of the queue's last change, so it stays."""
    from swarmdeck.actions.backfill import Queued, Running, order_as_of_change, queue_order

    queued = [Queued(100.0, 6 * GIB, 6.4, 1), Queued(100.0, 3 * GIB, 10.4, 2),
              Queued(100.0, 8 * GIB, 10.4, 3)]
    running = [Running(6 * GIB, 92.0, 16.0), Running(GIB, 90.0, 20.0)]
    at_change = [Holder(6 * GIB, 8.0), Holder(GIB, 10.0)]
    two_seconds_on = [Holder(6 * GIB, 6.0), Holder(GIB, 8.0)]
    assert queue_order(queued, at_change, 3 * GIB) == [1, 2, 0]
    assert queue_order(queued, two_seconds_on, 3 * GIB) == [2, 0, 1]
    assert order_as_of_change(queued, running, 10 * GIB) == [1, 2, 0]


def test_the_queue_shown_a_second_after_its_last_change_keeps_that_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The same jobs in a 100M slice, in the ledger: looked at a second after the three came,
    with nothing started or ended, the 30M job is still first, as it was when they came."""
    from swarmdeck.actions.admission import planned_queue
    from swarmdeck.probes.memory_book import ledger_jobs

    store = StateStore(tmp_path / "state.db")
    with store.transaction() as conn:
        for workload, seconds in (("a", 16.0), ("b", 20.0), ("j1", 6.4), ("j2", 10.4),
                                  ("j3", 10.4)):
            conn.execute("INSERT INTO peaks (fingerprint, peak, duration) VALUES (?, ?, ?)",
                         (workload, MIB, seconds))
        insert_job(conn, host="here", booked=60 * MIB, fingerprint="a", state="running",
                   admitted_at=92.0, started_at=92.0)
        insert_job(conn, host="here", booked=10 * MIB, fingerprint="b", state="running",
                   admitted_at=90.0, started_at=90.0)
        ids = [insert_job(conn, host="here", booked=booked * MIB, fingerprint=workload,
                          state="queued", created_at=100.0)
               for workload, booked in (("j1", 60), ("j2", 30), ("j3", 80))]
    jobs = list(ledger_jobs(store, "here"))
    monkeypatch.setattr(admission, "now", lambda: 101.0)
    spots = planned_queue(store, "here", jobs, 30 * MIB, 100 * MIB)
    assert [spots[job_id].place for job_id in ids] == [3, 1, 2]
