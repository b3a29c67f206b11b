"""EASY backfill: when a queued job may start ahead of a bigger one waiting before it.

The queue is in order (order_as_of_change: arrival, jobs that arrive together put in the
order that their learned run times, played forward from the queue's last change, say ends the
queue soonest): a job ahead that fits is as good as started. The first job ahead that does not
fit is the head; it is given a reservation at its shadow time, the moment enough of the
running jobs will have ended for it to fit (from their learned durations). A later job may
start now only if it fits now and either ends before the shadow time, or leaves the head's
room at that time untouched. Where no run time is known (a first day), a job may still start
if no set of the running jobs' ends frees room for the head without also freeing room for it
beside the head. So the head is never delayed by a job let in beside it, as with Slurm's
backfill on time limits; jobs behind the head are not protected (EASY). The order is chosen
again only when a job arrives, starts or ends, so the head keeps its place between those.
Pure: admission gathers the numbers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from swarmdeck.sizes import MIB

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

SLACK = 1.25
"""A backfilled job is taken to run its longest recent run times this."""
SUM_STEPS = 4096
"""head_keeps_its_start counts room in steps of this share of what the head lacks and the job
books (a MiB at least), so its cost does not grow with the slice."""
LONGEST_FIRST_WITHIN = 60.0
"""Seconds: the queue's order is arrival, a job with a known run time counted as having come
up to this much earlier (by one of ORDERS). Among jobs that arrive together (a swarm's burst)
that puts the longest, the largest or the biggest first; a job queued longer than this is
never passed by one that arrives after it, so a head that has waited is not delayed by
newcomers."""


@dataclass(frozen=True)
class Holder:
    """A job holding room now: what it gives back when it ends, and when that is."""

    frees: int
    ends_in: float | None
    """Seconds from now, at the earliest; None when not known."""


@dataclass(frozen=True)
class Waiter:
    """A queued job: its booking, and how long it runs at the most (None: not known)."""

    booked: int
    runs_for: float | None


@dataclass(frozen=True)
class Queued:
    """A queued job as the queue's order sees it."""

    created_at: float
    booked: int
    longest: float | None
    """Its longest recent run, seconds; None when not known."""
    job_id: int | None
    """None for a job whose row is not written yet: it goes last among equals."""


def longest_first(job: Queued, whole: int) -> float:
    """LPT: a job is advanced by its longest recent run, so no long job submitted in a burst
    runs on alone at the end of the day."""
    return job.longest or 0.0


def largest_first(job: Queued, whole: int) -> float:
    """By its area: its longest recent run times its booking's share of the `whole` room, so
    big jobs of short runs do not meet at the end of the day, where two of them leave the
    rest of the room empty."""
    return (job.longest or 0.0) * job.booked / max(whole, 1)


def biggest_first(job: Queued, whole: int) -> float:
    """By its booking's share of the `whole` room, as that share of LONGEST_FIRST_WITHIN."""
    return LONGEST_FIRST_WITHIN * min(job.booked / max(whole, 1), 1.0)


PLAN_AT_MOST = 32
"""Queued jobs: a longer queue is longest first. Playing an order forward costs more than the
square of the queue's length (16 ms for 32 jobs, 126 ms for 100: bench/results/swarm.md),
and every runner whose job fits now pays it under the admission lock."""

ORDERS: tuple[Callable[[Queued, int], float], ...] = (longest_first, largest_first, biggest_first)
"""How far each order advances a job (seconds, up to LONGEST_FIRST_WITHIN); the first is the
order wherever the learned run times cannot tell them apart."""


def queue_key(
    job: Queued, whole: int, advance: Callable[[Queued, int], float] = longest_first
) -> tuple[float, int]:
    """Where a queued job stands in the queue (lowest first): its arrival, advanced by
    `advance` up to LONGEST_FIRST_WITHIN; ties by id, a job not yet written last."""
    return (
        job.created_at - min(advance(job, whole), LONGEST_FIRST_WITHIN),
        job.job_id if job.job_id is not None else 1 << 62,
    )


def queue_order(
    queued: Sequence[Queued], holders: Sequence[Holder], usable: int, plan: bool = True
) -> list[int]:
    """The places of `queued` in the queue's order: the one of ORDERS whose last job the
    learned run times, played forward by queue_plan from the running `holders` and the
    `usable` room, see end soonest. Where a queued job's run time or an end the queue waits
    on is not known, or no order ends sooner, or `plan` is false (nothing is to start now), or
    the queue is longer than PLAN_AT_MOST, the first."""
    whole = usable + sum(holder.frees for holder in holders)
    orders = [
        sorted(range(len(queued)), key=lambda i, advance=advance: queue_key(
            queued[i], whole, advance))
        for advance in ORDERS
    ]
    if (not plan or not 2 <= len(queued) <= PLAN_AT_MOST
            or any(job.longest is None for job in queued)):
        return orders[0]
    chosen, soonest = orders[0], _last_end([queued[i] for i in orders[0]], holders, usable)
    for order in orders[1:]:
        if soonest is None:
            break
        if order != chosen:
            end = _last_end([queued[i] for i in order], holders, usable)
            if end is not None and end < soonest:
                chosen, soonest = order, end
    return chosen


@dataclass(frozen=True)
class Running:
    """A job holding room, as the queue's order sees it."""

    booked: int
    began: float
    """When it was admitted or started (epoch seconds)."""
    shortest: float | None
    """Its shortest recent run, seconds; None when not known."""


def order_as_of_change(
    queued: Sequence[Queued], running: Sequence[Running], whole: int, plan: bool = True
) -> list[int]:
    """queue_order as of the queue's last change (the latest arrival among `queued`, the
    latest start among `running`), on their bookings in the `whole` slice. Nothing in it moves
    with the clock, so between two changes every look takes the same order: a head keeps its
    place until a job arrives, starts or ends, and is not passed by a job of its burst merely
    because the running jobs' ends came nearer while it waited."""
    as_of = max([job.created_at for job in queued] + [job.began for job in running],
                default=0.0)
    holders = [Holder(job.booked, holder_end(as_of - job.began, job.shortest))
               for job in running]
    room = max(0, whole - sum(job.booked for job in running))
    return queue_order(queued, holders, room, plan)


def _last_end(queued: Sequence[Queued], holders: Sequence[Holder], usable: int) -> float | None:
    """When the last of `queued` (in this order) ends, as queue_plan plays the rule forward;
    None where that depends on an end nobody knows."""
    waiters = [Waiter(job.booked, waiter_run(job.longest)) for job in queued]
    ends = [
        spot.starts_in + waiter.runs_for
        for spot, waiter in zip(queue_plan(waiters, holders, usable), waiters, strict=True)
        if spot.starts_in is not None and waiter.runs_for is not None
    ]
    return max(ends) if len(ends) == len(waiters) else None


def may_start(
    job: Waiter,
    ahead: Sequence[Waiter],
    holders: Sequence[Holder],
    usable: int,
    ended_by: Sequence[Holder] | None = None,
) -> bool:
    """Whether `job` may be admitted now, with `ahead` queued before it (in order), `holders`
    running (each at its earliest end) and `usable` room in the book. `ended_by` holds the
    same running jobs at the time by which each has surely ended (None: no such time known);
    by default their earliest ends, as when run times are exact.

    The earliest ends give the head's earliest start, which a job must end before; the sure
    ends give the time by which the head surely fits, beside which a job must leave it room:
    taking the earliest ends there would count room given back by jobs still running (one
    past its shortest run "may end any moment", and may well not), and the head would wait on
    behind the jobs let in beside it.

    Estimates lean to the head's side: the head's earliest start comes from the running jobs'
    shortest recent runs (one running longer than that may end any moment: now), and a job
    must end before it in its longest recent run times SLACK; the room left beside the head
    comes from when the running jobs have surely ended (their longest runs times SLACK; never,
    for one past that). Whenever an end is unknown, the job must fit beside every job ahead of
    it, or leave the head its start whenever the running jobs end (head_keeps_its_start)."""
    in_order = job.booked + sum(waiter.booked for waiter in ahead) <= usable
    room = usable
    starting: list[Waiter] = []
    head: Waiter | None = None
    for waiter in ahead:
        if waiter.booked > room:
            head = waiter
            break
        room -= waiter.booked
        starting.append(waiter)
    if head is None or job.booked > room:
        return in_order
    started = [Holder(w.booked, w.runs_for) for w in starting]
    ends = [*holders, *started]
    if any(end.ends_in is None for end in ends):
        return in_order or head_keeps_its_start(job.booked, head.booked, room, ends)
    shadow = shadow_of(head.booked, room, ends)
    if shadow is None:
        return in_order
    ends_first = job.runs_for is not None and job.runs_for <= shadow[0]
    sure = [
        end for end in [*(holders if ended_by is None else ended_by), *started]
        if end.ends_in is not None
    ]
    surely = shadow_of(head.booked, room, sure)
    beside = surely is not None and job.booked <= surely[1]
    return in_order or ends_first or beside or head_keeps_its_start(
        job.booked, head.booked, room, ends)


def head_keeps_its_start(booked: int, needed: int, room: int, ends: Sequence[Holder]) -> bool:
    """Whether a job of `booked` may run beside the running `ends` without delaying a head
    that needs `needed` where `room` is free, whenever they end and in whatever order, and
    however long the job itself runs: no set of them frees enough for the head without
    also freeing enough for the job beside it. Sums are taken in whole steps (SUM_STEPS),
    rounded to the head's side."""
    lacking = needed - room
    if lacking <= 0:
        return False
    step = max(MIB, (lacking + booked) // SUM_STEPS)
    low = lacking // step - len(ends)
    high = -(-(lacking + booked) // step)
    sums = 1
    for end in ends:
        sums |= sums << (end.frees // step)
        sums &= (1 << high) - 1
    return sums >> max(low, 0) == 0


def shadow_of(needed: int, room: int, ends: Sequence[Holder]) -> tuple[float, int] | None:
    """When the head first fits as the `ends` come (seconds from now), and the room left over
    beside it then; None when it does not fit even after all of them."""
    available = room
    for end in sorted(ends, key=lambda end: end.ends_in or 0.0):
        available += end.frees
        if available >= needed:
            return end.ends_in or 0.0, available - needed
    return None


def holder_end(started_ago: float, shortest: float | None) -> float | None:
    """A running job's earliest end from its shortest recent run: now, once it has run longer
    than that (it may end any moment, and the earliest end is the one that keeps the head
    safe); None when it has no history."""
    if shortest is None:
        return None
    return max(0.0, shortest - started_ago)


def holder_sure_end(started_ago: float, longest: float | None) -> float | None:
    """By when a running job has surely ended, from its longest recent run times SLACK; None
    when it has no history or has run past that (it may run on: no end is sure)."""
    if longest is None or started_ago > longest * SLACK:
        return None
    return longest * SLACK - started_ago


def waiter_run(longest: float | None) -> float | None:
    """How long a queued job is taken to run at the most, from its longest recent run."""
    return None if longest is None else longest * SLACK


@dataclass(frozen=True)
class Spot:
    """Where a queued job stands: its place, what it waits for, when it should start."""

    place: int
    """1 for the first job in the queue."""
    waits_for: str
    starts_in: float | None
    """Seconds from now, as the learned run times say; None when they do not say."""


def queue_plan(queued: Sequence[Waiter], holders: Sequence[Holder], usable: int) -> list[Spot]:
    """The queue as it will run: each queued job (in order) with what it waits for now and its
    expected start, from playing the rule of `may_start` forward over the learned run times.
    Memory given back is taken as booked; a job whose start depends on an end nobody knows has
    no expected start."""
    starts: dict[int, float] = {}
    now, room = 0.0, usable
    ends = [(h.ends_in, h.frees) for h in holders]
    waiting = list(range(len(queued)))
    while waiting:
        started = next(
            (
                place for place, index in enumerate(waiting)
                if may_start(
                    queued[index], [queued[i] for i in waiting[:place]],
                    [Holder(frees, None if end is None else end - now) for end, frees in ends],
                    room,
                )
            ),
            None,
        )
        if started is not None:
            index = waiting.pop(started)
            starts[index] = now
            room -= queued[index].booked
            runs = queued[index].runs_for
            ends.append((None if runs is None else now + runs, queued[index].booked))
            continue
        known = [end for end, _ in ends if end is not None and end > now]
        if not known:
            break
        now = min(known)
        room += sum(frees for end, frees in ends if end == now)
        ends = [(end, frees) for end, frees in ends if end != now]
    return [
        Spot(
            place + 1,
            "nothing: it starts at its next look" if starts.get(place) == 0.0
            else _waits_for(place, queued, usable),
            starts.get(place),
        )
        for place in range(len(queued))
    ]


def _waits_for(place: int, queued: Sequence[Waiter], usable: int) -> str:
    """What the job at `place`, which cannot start now, waits for: the head before it (it
    fits, but would hold the head's room), or room."""
    room = usable
    for before, waiter in enumerate(queued[:place]):
        if waiter.booked > room:
            if queued[place].booked <= room:
                return (f"the head (place {before + 1}): it would still run when that one "
                        "can start")
            break
        room -= waiter.booked
    return "room"
