"""Would another queue order or backfill rule have ended a swarmdeck day sooner?

Replays one day of a `bench_swarm.py --keep FOLDER` run: each job arrives when its ledger row
was created, books what it was admitted on and runs as long as it ran (started → ended); the
run times it had learned are the peaks table's from before that day. At every arrival and
every end each queued job decides in the queue's order, with the real rule
(actions/backfill.may_start), as woken runners do. What changes between replays is only the
order, or the rule:

- arrival: strict arrival order;
- as built: backfill.order_as_of_change at every look (whichever of its orders the learned
  run times, played forward from the queue's last change, see end the queue soonest);
- each of backfill.ORDERS alone at every look: longest first (a job advanced by its longest
  learned run), largest first (by its run × its booking's share of the slice) and biggest
  first (by its booking's share of the slice × 60 s);
- first fit: any job that fits starts, in the built order (no head is protected).
- searched: at every look, whichever of the built order and SEARCH_TRIES shuffles ends
  soonest in a first-fit playout of the learned runs (a proposal, not the built rule).

The replay has no runners' start, no wake-up lag and no rebooking, so it measures the queue
alone: a gap between the rows is the order's, one between "as built" and the bookings' area
is the packing's and the tail's (discrete jobs against a bound that takes memory as fluid).

`--whole` asks instead how far the bench's bound is from any schedule of these jobs: with
their measured peaks and run times, all there at once, it gives the bench's bound (memory
as fluid), a bound for whole jobs (no more than k of the jobs that peak over a (k+1)th of
the slice can run at once, so they need their runs' sum / k), the best first-fit
schedule found over many orders, an ideal runner's, and the same search made on the run
times known before the day (each job's longest earlier run) and played on the day's: the
best any order can do that is chosen from the learned run times, as a queue's must be.

    .venv/bin/python bench/swarm_replay.py FOLDER [--day 2] [--whole]
"""

from __future__ import annotations

import argparse
import heapq
import random
import sqlite3
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))
sys.path.insert(0, str(HERE))

from swarm_gap import MIB, SLICE_MIB, day_rows, day_wall  # noqa: E402
from swarmdeck.actions import backfill  # noqa: E402

SLICE = SLICE_MIB * MIB - MIB
"""The room the bench's config leaves: the slice less its 1M margin."""


@dataclass(frozen=True)
class Job:
    arrives: float
    booked: int
    peak: int
    runs: float
    shortest: float | None
    longest: float | None


Order = Callable[[list["Job"], list[int], list[backfill.Running]], list[int]]
"""The queued jobs (indices into the day's jobs) in the order they decide in, from the
running jobs."""


def load(db: Path, day: int) -> list[Job]:
    rows = day_rows(db, day)
    if not rows or any(row["ended_at"] is None for row in rows):
        return []
    begin = min(row["created_at"] for row in rows)
    conn = sqlite3.connect(db)
    jobs = []
    for row in rows:
        (workload,) = conn.execute(
            "SELECT fingerprint FROM jobs WHERE label = ? AND created_at = ?",
            (row["label"], row["created_at"]),
        ).fetchone()
        runs = [seconds for (seconds,) in conn.execute(
            "SELECT duration FROM peaks WHERE fingerprint = ? AND recorded_at < ?"
            " AND duration IS NOT NULL ORDER BY recorded_at DESC LIMIT 5", (workload, begin),
        )]
        jobs.append(Job(row["created_at"] - begin, row["booked"], row["peak"] or 0,
                        row["ended_at"] - row["started_at"],
                        min(runs, default=None), max(runs, default=None)))
    return jobs


def replay(jobs: list[Job], order: Order, first_fit: bool = False) -> float:
    """The day's makespan from its first arrival under `order`."""
    pending = sorted(range(len(jobs)), key=lambda i: jobs[i].arrives)
    queued: list[int] = []
    running: dict[int, tuple[float, float]] = {}
    clock = 0.0

    def earliest() -> list[backfill.Holder]:
        return [backfill.Holder(jobs[k].booked, backfill.holder_end(clock - began,
                                                                    jobs[k].shortest))
                for k, (began, _) in running.items()]

    def starts(index: int, ahead: list[int]) -> bool:
        job = jobs[index]
        usable = SLICE - sum(jobs[k].booked for k in running)
        if first_fit:
            return job.booked <= usable
        sure = [backfill.Holder(jobs[k].booked, backfill.holder_sure_end(clock - began,
                                                                         jobs[k].longest))
                for k, (began, _) in running.items()]
        waiters = [backfill.Waiter(jobs[k].booked, backfill.waiter_run(jobs[k].longest))
                   for k in ahead]
        own = backfill.Waiter(job.booked, backfill.waiter_run(job.longest))
        return backfill.may_start(own, waiters, earliest(), usable, sure)

    def look(who: set[int]) -> None:
        started = True
        while started:
            started = False
            ordered = order(jobs, queued, [backfill.Running(jobs[k].booked, began,
                                                            jobs[k].shortest)
                                           for k, (began, _) in running.items()])
            for place, index in enumerate(ordered):
                if index in who and starts(index, ordered[:place]):
                    queued.remove(index)
                    running[index] = (clock, clock + jobs[index].runs)
                    started = True
                    break

    while pending or queued or running:
        arrival = jobs[pending[0]].arrives if pending else float("inf")
        end = min((ends for _, ends in running.values()), default=float("inf"))
        if arrival == end == float("inf"):
            raise SystemExit("swarm_replay: a job never fits")
        if arrival <= end:
            clock = arrival
            arrived = set()
            while pending and jobs[pending[0]].arrives == clock:
                arrived.add(pending.pop(0))
            queued.extend(arrived)
            look(arrived)
        else:
            clock = end
            for index in [k for k, (_, ends) in running.items() if ends <= clock]:
                del running[index]
            look(set(queued))
    return clock


def entries(jobs: list[Job], queued: list[int]) -> list[backfill.Queued]:
    return [backfill.Queued(jobs[k].arrives, jobs[k].booked, jobs[k].longest, k) for k in queued]


def arrival(jobs: list[Job], queued: list[int], running: list[backfill.Running]) -> list[int]:
    return sorted(queued, key=lambda k: (jobs[k].arrives, k))


def as_built(jobs: list[Job], queued: list[int], running: list[backfill.Running]) -> list[int]:
    return [queued[place]
            for place in backfill.order_as_of_change(entries(jobs, queued), running, SLICE)]


def alone(advance: Callable[[backfill.Queued, int], float]) -> Order:
    """One of backfill.ORDERS at every look, whatever the others would give."""
    def order(jobs: list[Job], queued: list[int], running: list[backfill.Running]
              ) -> list[int]:
        keys = {k: backfill.queue_key(entry, SLICE, advance)
                for k, entry in zip(queued, entries(jobs, queued), strict=True)}
        return sorted(queued, key=keys.__getitem__)
    return order


SEARCH_TRIES = 300
"""Shuffles the searched order plays out at every look, beside the built order."""


def searched(jobs: list[Job], queued: list[int], running: list[backfill.Running]
             ) -> list[int]:
    """At every look, whichever of the built order and SEARCH_TRIES seeded shuffles of it
    ends soonest in a first-fit playout of the queued jobs' bookings and longest earlier
    runs, from the running jobs' earliest ends as of the queue's last change: a planner that
    searches, where the built queue weighs three orders."""
    built = as_built(jobs, queued, running)
    if len(built) < 2 or any(jobs[k].longest is None for k in built):
        return built
    as_of = max([jobs[k].arrives for k in built] + [job.began for job in running])
    held = [(backfill.holder_end(as_of - job.began, job.shortest) or 0.0, job.booked)
            for job in running]
    learned = [replace(job, peak=job.booked) for job in as_learned([jobs[k] for k in built])]
    shuffler = random.Random(34)
    places = list(range(len(built)))
    orders = [places, *(shuffler.sample(places, len(places)) for _ in range(SEARCH_TRIES))]
    best = min(orders, key=lambda order: first_fit(learned, order, held))
    return [built[place] for place in best]


def fluid_bound(jobs: list[Job]) -> float:
    """The bench's bound: Σ peak × run / slice, or the longest run."""
    return max(sum(job.peak * job.runs for job in jobs) / SLICE, max(job.runs for job in jobs))


def whole_bound(jobs: list[Job]) -> float:
    """No schedule of whole jobs ends sooner: beside the fluid bound, at most k jobs that
    peak over a (k+1)th of the slice run at once, so those need their runs' sum / k."""
    crowded = max(
        sum(job.runs for job in jobs if job.peak * (k + 1) > SLICE) / k
        for k in range(1, len(jobs) + 1)
    )
    return max(fluid_bound(jobs), crowded)


def first_fit(jobs: list[Job], order: list[int],
              running: Sequence[tuple[float, int]] = ()) -> float:
    """All jobs there at once, beside the `running` ones (each as its end, seconds from now,
    and the room it holds), each start and end letting in every job, in `order`, that fits
    by its peak: an ideal runner's makespan."""
    waiting = list(order)
    ends = list(running)
    heapq.heapify(ends)
    clock, held = 0.0, sum(size for _, size in ends)
    while waiting:
        for index in list(waiting):
            if held + jobs[index].peak <= SLICE:
                waiting.remove(index)
                held += jobs[index].peak
                heapq.heappush(ends, (clock + jobs[index].runs, jobs[index].peak))
        if not ends:
            raise SystemExit("swarm_replay: a job never fits")
        clock, size = heapq.heappop(ends)
        held -= size
    return max([clock, *(end for end, _ in ends)])


def best_order(jobs: list[Job], tries: int) -> list[int]:
    """The order whose first-fit schedule is the shortest over longest first, biggest first,
    area first and `tries` shuffles (seeded, so a rerun finds the same)."""
    indices = list(range(len(jobs)))
    orders = [
        sorted(indices, key=lambda k: -jobs[k].runs),
        sorted(indices, key=lambda k: -jobs[k].peak),
        sorted(indices, key=lambda k: -jobs[k].peak * jobs[k].runs),
    ]
    shuffler = random.Random(34)
    for _ in range(tries):
        orders.append(shuffler.sample(indices, len(indices)))
    return min(orders, key=lambda order: first_fit(jobs, order))


def as_learned(jobs: list[Job]) -> list[Job]:
    """The jobs as a queue knows them before they run: each run as long as its longest
    earlier run (its own, where it has none), each peak its own."""
    return [replace(job, runs=job.longest or job.runs) for job in jobs]


def print_whole(folder: Path, day: int, tries: int) -> None:
    print("| trace | bound (fluid) | bound (whole jobs) | best schedule found"
          " | best order on the learned runs | swarmdeck's day | whole / fluid | best / fluid"
          " | learned / fluid | day / best |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for state in sorted(folder.glob("state-*")):
        jobs = load(state / "state.db", day)
        if not jobs:
            continue
        trace = state.name.removeprefix("state-")
        fluid, whole = fluid_bound(jobs), whole_bound(jobs)
        best = first_fit(jobs, best_order(jobs, tries))
        learned = first_fit(jobs, best_order(as_learned(jobs), tries))
        wall = day_wall(folder, trace, day)
        made = wall[1] - wall[0] if wall else max(job.arrives + job.runs for job in jobs)
        print(f"| {trace} | {fluid:.1f} s | {whole:.1f} s | {best:.1f} s | {learned:.1f} s"
              f" | {made:.1f} s | {whole / fluid:.2f}× | {best / fluid:.2f}×"
              f" | {learned / fluid:.2f}× | {made / best:.2f}× |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--day", type=int, default=2)
    parser.add_argument("--whole", action="store_true",
                        help="the bench's bound against whole jobs' bound and best schedule")
    parser.add_argument("--tries", type=int, default=2000,
                        help="random orders --whole tries beside the three sorted ones")
    args = parser.parse_args()
    if args.whole:
        print_whole(args.folder, args.day, args.tries)
        return
    alone_orders = [alone(advance) for advance in backfill.ORDERS]
    names = [advance.__name__.replace("_", " ") for advance in backfill.ORDERS]
    print("| trace | bookings' area | arrival | as built | " + " | ".join(names)
          + " | first fit | searched |")
    print("|---|---:|---:|---:|" + "---:|" * len(names) + "---:|---:|")
    for state in sorted(args.folder.glob("state-*")):
        jobs = load(state / "state.db", args.day)
        if not jobs:
            continue
        area = sum(job.booked * job.runs for job in jobs) / SLICE
        cells = [replay(jobs, order) for order in (arrival, as_built, *alone_orders)]
        cells.append(replay(jobs, as_built, first_fit=True))
        cells.append(replay(jobs, searched))
        print(f"| {state.name.removeprefix('state-')} | {area:.1f} s | "
              + " | ".join(f"{cell:.1f} s" for cell in cells) + " |")


if __name__ == "__main__":
    main()
