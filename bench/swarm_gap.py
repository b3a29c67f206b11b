"""Where a swarmdeck day's time goes between the memory bound and its makespan.

Reads what `bench_swarm.py --keep FOLDER` left (each trace's ledger and plan) and splits the
slice × time of one day (the ledger's rows from the day's first submission to its last end)
into parts, each given in seconds of the whole slice (area / slice), so they add up to the
day's span:

- work: each job's peak (as the ledger measured it) × the seconds its process ran (started →
  ended, which holds the job's own interpreter start and exit, and the runner's noticing);
- start and end: the peak × the seconds its booking was held outside that (admitted →
  started: cage and spawn);
- margin: (booked − peak) × the seconds its booking was held;
- room free, head fits: no booking holds it, a job is queued and the first queued job's
  booking fits in it (by the bookings: waiting with room free, the wake-up's and the
  slice's own lag);
- room free, head too big, one behind fits: the head does not fit in it, a job queued
  behind the head does (what backfill declined: its run would reach past the head's start);
- room free, head too big: a job is queued and no queued job fits in it (packing);
- room free, nothing queued: the day's tail, every job admitted;
- runners' start, runners' exit: from the bench starting the runners to the first row, and
  from the last job's end to the last runner's exit (days-TRACE.json, the bench's clock).

    .venv/bin/python bench/swarm_gap.py FOLDER [--day 2]
"""

from __future__ import annotations

import argparse
import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path

MIB = 1 << 20
SLICE_MIB = 3072
STEP = 0.01
"""Seconds between the looks at the timeline."""


@dataclass(frozen=True)
class Span:
    label: str
    created: float
    admitted: float
    started: float
    ended: float
    booked: float
    """MiB."""
    peak: float
    """MiB the ledger measured it at."""


def day_rows(db: Path, day: int) -> list[sqlite3.Row]:
    """The ledger's rows of `day` (1 first): days are the bursts, a gap of 1 s or more
    between one row's creation and the next."""
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    rows = conn.execute(
        "SELECT label, created_at, admitted_at, started_at, ended_at, booked, peak FROM jobs"
        " WHERE started_at IS NOT NULL ORDER BY created_at"
    ).fetchall()
    days: list[list[sqlite3.Row]] = []
    last_end = 0.0
    for row in rows:
        if not days or row["created_at"] > last_end:
            days.append([])
        days[-1].append(row)
        last_end = max(last_end, row["ended_at"] or 0.0)
    return days[day - 1] if day <= len(days) else []


def day_wall(folder: Path, trace: str, day: int) -> tuple[float, float] | None:
    """The day's begin and end by the bench's clock (days-TRACE.json); None when not kept."""
    walls = folder / f"days-{trace}.json"
    if not walls.exists():
        return None
    days = [json.loads(line) for line in walls.read_text().splitlines()]
    begin, end = next(row["wall"] for row in days if row["day"] == day)
    return begin, end


def spans(folder: Path, trace: str, day: int) -> list[Span]:
    return [
        Span(row["label"], row["created_at"], row["admitted_at"], row["started_at"],
             row["ended_at"], row["booked"] / MIB, (row["peak"] or 0) / MIB)
        for row in day_rows(folder / f"state-{trace}" / "state.db", day)
    ]


def split(jobs: list[Span]) -> dict[str, float]:
    """The day's slice-seconds by part, in seconds of the whole slice."""
    parts = dict.fromkeys(
        ("work", "start and end", "margin", "room free, head fits",
         "room free, head too big, one behind fits", "room free, head too big",
         "room free, nothing queued"), 0.0)
    for job in jobs:
        parts["work"] += job.peak * (job.ended - job.started)
        parts["start and end"] += job.peak * (job.started - job.admitted)
        parts["margin"] += (job.booked - job.peak) * (job.ended - job.admitted)
    begin = min(job.created for job in jobs)
    end = max(job.ended for job in jobs)
    t = begin
    while t < end:
        held = sum(job.booked for job in jobs if job.admitted <= t < job.ended)
        free = max(0.0, SLICE_MIB - held)
        queued = sorted((job for job in jobs if job.created <= t < job.admitted),
                        key=lambda job: job.admitted)
        if not queued:
            parts["room free, nothing queued"] += free * STEP
        elif queued[0].booked <= free:
            parts["room free, head fits"] += free * STEP
        elif any(job.booked <= free for job in queued):
            parts["room free, head too big, one behind fits"] += free * STEP
        else:
            parts["room free, head too big"] += free * STEP
        t += STEP
    return {name: area / SLICE_MIB for name, area in parts.items()}


def bound(jobs: list[Span]) -> float:
    """The bench's bound, from the ledger's peaks and run times."""
    area = sum(job.peak * (job.ended - job.started) for job in jobs)
    return max(area / SLICE_MIB, max(job.ended - job.started for job in jobs))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--day", type=int, default=2)
    parser.add_argument("--jobs", action="store_true", help="print each job's times too")
    parser.add_argument("--markdown", action="store_true",
                        help="one table row per trace: seconds (share of the makespan)")
    args = parser.parse_args()
    for state in sorted(args.folder.glob("state-*")):
        trace = state.name.removeprefix("state-")
        jobs = spans(args.folder, trace, args.day)
        if not jobs:
            continue
        begin = min(job.created for job in jobs)
        span = max(job.ended for job in jobs) - begin
        parts = split(jobs)
        wall = day_wall(args.folder, trace, args.day)
        if wall is not None:
            parts["runners' start"] = begin - wall[0]
            parts["runners' exit"] = wall[1] - max(job.ended for job in jobs)
            begin, span = wall[0], wall[1] - wall[0]
        if args.markdown:
            cells = " | ".join(f"{part:.1f} ({part / span:.0%})" for part in parts.values())
            print(f"| {trace} | {span:.1f} s | {cells} |")
            continue
        print(f"{trace}, day {args.day}: span {span:.1f} s, bound {bound(jobs):.1f} s, "
              f"ratio {span / bound(jobs):.2f}")
        for name, seconds in parts.items():
            print(f"  {name:42s} {seconds:6.1f} s  {seconds / span:5.0%}")
        if args.jobs:
            for job in sorted(jobs, key=lambda job: job.created):
                print(f"  {job.label:22s} +{job.created - begin:5.2f} admitted"
                      f" +{job.admitted - begin:5.2f} started +{job.started - begin:5.2f}"
                      f" ended +{job.ended - begin:5.2f} booked {job.booked:6.0f}"
                      f" peak {job.peak:6.0f}")


if __name__ == "__main__":
    main()
