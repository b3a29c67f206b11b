"""How much memory a job books on the ledger, its cap, and whether the book has room for it.

These are the rules of DESIGN.md "The memory book" as pure functions, so every rule is tested
without a machine and the runner only gathers numbers and acts on the answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from itertools import pairwise
from typing import TYPE_CHECKING

from swarmdeck.actions.run_request import MIN_CAP
from swarmdeck.probes.memory_book import MemoryBook
from swarmdeck.sizes import MIB

if TYPE_CHECKING:
    from collections.abc import Sequence
    from fractions import Fraction

HISTORY_WINDOW = 5
"""How many recent runs of a workload the prediction looks at."""
HEADROOM_TENTHS = 11
"""A prediction from one run books a tenth more than its peak: 11 tenths of it, exactly; from
more runs, the margin is their spread, never more than this tenth."""
LEAST_MARGIN_PERCENT = 2
"""The least margin over the largest recent peak, however alike the recent runs were."""
FOLDER_LEAST_RUNS = 3
"""The least number of recent capped runs in a folder, none at its ceiling, for a job with no
history of its own nor of its family to book the share of its cap they reached: fewer would
be a guess."""
FOLDER_LEAST_WORKLOADS = 3
"""The least number of other workloads in a folder with two runs or more, none at its
ceiling, whose spread sets the margin of a workload with a single run (folder_spread)."""

SETTLE_SLACK = 1.5
"""A running job is taken to have reached its peak once it has run this many times as long as
its family's or folder's runs (those that ran as long) took to reach theirs."""
SETTLE_QUIET = 1.0
"""Seconds a running job's own working set must have stayed within LEAST_MARGIN_PERCENT of its
peak before it books that peak: one still climbing books what it holds, whatever its runs
say."""
OUTGROWING_STEP = (HEADROOM_TENTHS - 10) * 10
"""The growth, in percent, a single run books while its folder's workloads run past their
bookings: a tenth, the most margin a prediction books over its peak, so more than they can
have grown by when they passed theirs by nothing."""

OOM_ADJ_UNBOUNDED = 1000
OOM_ADJ_PREDICTED = 500
OOM_ADJ_ON_CAP = 0
OOM_ADJ_OUTGROWN = OOM_ADJ_UNBOUNDED
"""The standing of a running job whose working set passed its booking (actions/standing.py):
that of a job that may take what nobody booked for it, killed before any that kept to its
booking."""


class Via(Enum):
    """What a booking was based on; shown in the Jobs panel as "admitted via"."""

    CAP = "cap"
    HISTORY = "history"
    CEILING = "ceiling"
    DEFAULT = "default"
    FAMILY = "family"
    FOLDER = "folder"
    SETTLED = "settled"
    SQUEEZED = "squeezed"
    """Its cap, after a run squeezed out of a full slice past its booking (254)."""


SETTLING = frozenset({Via.CAP, Via.DEFAULT, Via.FAMILY, Via.FOLDER, Via.HISTORY, Via.SQUEEZED})
"""What a booking that settles on the job's working set may have been based on: fiction,
priors and its own history, whose margins cover a peak not reached yet; a squeezed run's cap
is fiction too, as the slice ran out there, not its cap. A ceiling booking is what the job was
stopped at, and a settled one says all there is to say."""


@dataclass(frozen=True)
class PastRun:
    """One recorded run of a workload, as the peaks table keeps it."""

    peak: int
    cap: int
    hit_ceiling: bool
    peak_at: float | None = None
    """Seconds from its start to when its working set reached its peak; None when not known
    (runs recorded before it was kept, runs measured elsewhere)."""
    duration: float | None = None
    squeezed: bool = False
    """Cut off by a full slice past its booking (254): remembered at its ceiling (hit_ceiling),
    though it stopped where the slice ran out, not at its cap."""


@dataclass(frozen=True)
class Booking:
    """What the ledger will hold for a job, its hard cap, and its OOM-killer standing."""

    booked: int
    cap: int
    via: Via
    oom_score_adj: int


class Decision(Enum):
    """The admission answer for one booking against one book."""

    ADMIT = "admit"
    WAIT = "wait"
    NEVER = "never"


def __getattr__(name: str) -> Fraction:
    """`HEADROOM`, the same rule as an exact fraction, for callers that compute with it; made
    when asked for, as importing `fractions` would slow every caged run and the rule here needs
    only integers."""
    if name == "HEADROOM":
        from fractions import Fraction

        return Fraction(HEADROOM_TENTHS, 10)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def mib_ceil(n: float) -> int:
    """`n` bytes rounded up to whole MiB: a size to put in a --cap."""
    # math.ceil by floor division of the negated size: the math module is not imported on
    # the run path (see durations.finite).
    return -int(-n // MIB) * MIB


def made_cap(booked: int, cap_factor: float) -> int:
    """The cap the runner gives a job run without --cap: its booking times cap_factor, never
    under MIN_CAP (a tiny command such as `date` learns a peak of 1M: its cap is raised to
    the least a job can be given, never refused for being under it)."""
    return max(MIN_CAP, mib_ceil(booked * cap_factor))


def predicted_peak(
    history: Sequence[PastRun], one_run: int | None = None, one_run_growth: int | None = None
) -> int:
    """The largest peak of the recent runs (newest first), plus its growth when they climb,
    plus a margin from their spread.

    Taking the maximum over a window is the hysteresis: one small run does not erase a big one;
    only HISTORY_WINDOW small runs in a row do. The margin is the recent runs' own spread
    (max − min over max, at least LEAST_MARGIN_PERCENT, at most a tenth; from a single run,
    `one_run` percent where its folder showed one (folder_spread), else a tenth), so a workload
    that peaks alike every time is booked close to its peak. A workload whose peak grew run
    after run is booked for one more step of the same growth, so it is not killed again for
    the growth it has already shown; a single run, by `one_run_growth` percent where its folder's
    workloads all grew from one run to the next (folder_growth).
    """
    peaks = [run.peak for run in history]
    top = max(peaks)
    margin = margin_percent(peaks, one_run)
    step = growth(peaks) if len(peaks) > 1 else -(-top * (one_run_growth or 0) // 100)
    return -(-(top + step) * (100 + margin) // (100 * MIB)) * MIB


def margin_percent(peaks: Sequence[int], one_run: int | None = None) -> int:
    """The margin over the largest peak, in percent, from the spread of `peaks`; of a single
    peak, `one_run` (kept within the same bounds) or, without it, a tenth."""
    most = (HEADROOM_TENTHS - 10) * 10
    top = max(peaks)
    if len(peaks) < 2 or top <= 0:
        return most if one_run is None else max(LEAST_MARGIN_PERCENT, min(most, one_run))
    spread = -(-(top - min(peaks)) * 100 // top)
    return max(LEAST_MARGIN_PERCENT, min(most, spread))


def folder_spread(workloads: Sequence[Sequence[PastRun]]) -> int | None:
    """The margin, in percent, a workload with a single run books in a folder whose other
    workloads (each one's recent runs, newest first) have shown how far their peaks move from
    one run to the next: the largest of their margins (margin_percent, at most a tenth), once
    FOLDER_LEAST_WORKLOADS of them have two runs or more and none of their runs hit its ceiling;
    None otherwise (a single run then books a tenth). A folder whose workloads grow from run
    to run shows that growth as their spread, and its single runs keep the tenth."""
    repeated = [runs[:HISTORY_WINDOW] for runs in workloads if len(runs) >= 2]
    if len(repeated) < FOLDER_LEAST_WORKLOADS:
        return None
    if any(run.hit_ceiling for runs in repeated for run in runs):
        return None
    return max(margin_percent([run.peak for run in runs]) for runs in repeated)


def folder_growth(workloads: Sequence[Sequence[PastRun]], outgrowing: int = 0) -> int | None:
    """The growth, in percent, a workload with a single run books on top of its peak in a
    folder whose workloads (each one's recent runs, newest first) all peak higher from one run
    to the next: the largest step of their latest two runs, once FOLDER_LEAST_WORKLOADS of them
    have two runs neither at its ceiling (a run cut off there says where it was stopped, not
    what it needed) and every one of those grew by more than LEAST_MARGIN_PERCENT; None
    otherwise. A drifting workload (a test suite that grows each day) then books today's growth
    as soon as three of its folder's workloads have shown it, where the margin of a single run
    (a tenth at most) let every one grow past its booking and fill the slice again and again.

    Before any of today's runs has ended, `outgrowing`, the folder's other workloads running
    past the bookings of their predictions now, shows it too: from FOLDER_LEAST_WORKLOADS of
    them, a single run grows its peak by OUTGROWING_STEP at least, so the jobs queued behind a
    day's first wave do not fill the slice again as it did."""
    steps = [
        -(-(runs[0].peak - runs[1].peak) * 100 // runs[1].peak)
        for runs in workloads
        if len(runs) >= 2 and runs[1].peak > 0
        and not runs[0].hit_ceiling and not runs[1].hit_ceiling
    ]
    shown = (
        max(steps)
        if len(steps) >= FOLDER_LEAST_WORKLOADS and min(steps) > LEAST_MARGIN_PERCENT
        else None
    )
    if outgrowing >= FOLDER_LEAST_WORKLOADS:
        return max(shown or 0, OUTGROWING_STEP)
    return shown


def growth(peaks: Sequence[int]) -> int:
    """The last step of growth when every recent run (newest first) peaked at least as high
    as the one before it and the newest higher still by more than LEAST_MARGIN_PERCENT (less
    is the noise of measuring a peak); 0 otherwise."""
    climbing = all(newer >= older for newer, older in pairwise(peaks))
    if len(peaks) < 2 or not climbing:
        return 0
    step = peaks[0] - peaks[1]
    return step if step * 100 > peaks[1] * LEAST_MARGIN_PERCENT else 0


def decide_booking(
    history: Sequence[PastRun],
    declared_cap: int | None,
    default_prediction: int,
    cap_factor: float,
    unbounded: bool,
    slice_cap: int,
    family: Sequence[PastRun] = (),
    folder: Sequence[PastRun] = (),
    spread: int | None = None,
    growth_step: int | None = None,
) -> Booking:
    """The booking, cap and oom_score_adj of a job.

    `history` holds the workload's recorded runs, newest first. With history the booking is the
    prediction, never above the declared cap; once a recent run hit its ceiling, it is this
    run's cap: the declared cap when one is given (the job needed all of the cap it hit, and
    more), else the largest cap hit, or the prediction where that is larger. Without history
    it is the declared cap (so a cap larger than the machine can never fit), else the default
    prediction. An unbounded job's cap is the whole slice: it declares no cap of its own (the
    runner refuses --cap beside --unbounded), and it never books more than that cap, so a
    default prediction or a history above the slice makes it wait for the whole slice, never
    refused as a job that can never fit.

    A job with no history of its own whose `family` (the same program and subcommand with
    other arguments, newest first) has runs, none at its ceiling, books the family's
    prediction, never over its declared cap: a prior, not fiction, and with the OOM standing
    of a prediction it is killed first if it guessed wrong.

    Failing that, a job with a declared cap whose `folder` (recent runs of any command in the
    same folder that declared a cap) holds FOLDER_LEAST_RUNS runs or more, none at its ceiling,
    books its cap times the largest share of their caps those runs reached, with a tenth's
    margin (folder_share): caps there are fiction by a measured factor. The same standing: it is
    killed first if it guessed wrong, and its next booking is its cap.

    A workload with a single run books its peak with `spread` percent over it where its folder
    showed how alike its workloads' runs are (folder_spread), a tenth without it; and, where its
    folder's workloads all grew from run to run, its peak grown by `growth_step` percent first
    (folder_growth).
    """
    recent = list(history[:HISTORY_WINDOW])
    kin = list(family[:HISTORY_WINDOW])
    if not recent and kin and not any(run.hit_ceiling for run in kin):
        peaks = [run.peak for run in kin]
        # The family's largest peak with its spread's margin; no growth: the order of its
        # members' runs is no trend of any one of them.
        booked, via = mib_ceil(max(peaks) * (100 + margin_percent(peaks)) / 100), Via.FAMILY
        if declared_cap is not None and booked >= declared_cap:
            booked, via = declared_cap, Via.CAP
    elif not recent:
        share = folder_share(folder) if declared_cap is not None else None
        if declared_cap is not None and share is not None and share < 1:
            booked, via = max(MIN_CAP, mib_ceil(declared_cap * share)), Via.FOLDER
        elif declared_cap is not None:
            booked, via = declared_cap, Via.CAP
        else:
            booked, via = default_prediction, Via.DEFAULT
    else:
        # A run that hit its ceiling peaked at its cap, not at what it needed: it raises the
        # booking to this run's cap instead of feeding the prediction. One squeezed out of a
        # full slice books the same, as SQUEEZED: fiction that settles once the job peaks.
        grown = [run for run in recent if not run.hit_ceiling]
        predicted = predicted_peak(grown, spread, growth_step) if grown else 0
        hit = [run for run in recent if run.hit_ceiling]
        ceiling = max((run.cap for run in hit), default=0)
        stopped = Via.SQUEEZED if hit and all(run.squeezed for run in hit) else Via.CEILING
        if hit and declared_cap is not None:
            booked, via = declared_cap, stopped
        elif ceiling >= predicted:
            booked, via = ceiling, stopped
        else:
            booked, via = predicted, Via.HISTORY
        if declared_cap is not None and booked >= declared_cap:
            booked, via = declared_cap, Via.CAP if via is Via.HISTORY else via
    cap = declared_cap if declared_cap is not None else made_cap(booked, cap_factor)
    if unbounded:
        cap = slice_cap
        booked = min(booked, cap)
        adj = OOM_ADJ_UNBOUNDED
    elif booked >= cap or via in (Via.CEILING, Via.SQUEEZED):
        # A ceiling booking books what the job was stopped at, not a guess: it stands with
        # the jobs booked on their cap.
        adj = OOM_ADJ_ON_CAP
    else:
        adj = OOM_ADJ_PREDICTED
    return Booking(booked=booked, cap=cap, via=via, oom_score_adj=adj)


def folder_share(folder: Sequence[PastRun]) -> float | None:
    """The share of its cap a capped job in this folder may take, from the folder's recent
    capped runs: the largest share of its cap any of them reached, plus a tenth of it; None
    when there are fewer than FOLDER_LEAST_RUNS of them or one hit its ceiling (its cap was
    no fiction)."""
    runs = [run for run in folder if run.cap > 0]
    if len(runs) < FOLDER_LEAST_RUNS or any(run.hit_ceiling for run in runs):
        return None
    return max(run.peak / run.cap for run in runs) * HEADROOM_TENTHS / 10


def lighter_booking(held: Booking, fresh: Booking | None, peak: int) -> Booking | None:
    """What a running job admitted on fiction (its cap or the default prediction) books once
    its family's or folder's runs give a job like it `fresh`: that, when it is less than it
    holds and the job's working set so far (`peak`) is within it, on the cap its cage
    has; None to keep what it holds. It stands where a prediction stands: killed first if
    the prediction was wrong, as a job admitted on it now would be."""
    if fresh is None or fresh.booked >= held.booked or peak > fresh.booked:
        return None
    return Booking(booked=fresh.booked, cap=held.cap, via=fresh.via,
                   oom_score_adj=max(held.oom_score_adj, OOM_ADJ_PREDICTED))


def peak_time(recorded: int, sampled: int, rose_at: float) -> float | None:
    """When a run reached the peak recorded for it (`recorded`): when its sampled working set
    last rose (`rose_at`, jobwatch), where the samples saw that peak within
    LEAST_MARGIN_PERCENT; None where the peak is the kernel's high-water mark between samples
    (a spike, or a run too short to be sampled), whose time nobody saw."""
    if sampled <= 0 or recorded * 100 > sampled * (100 + LEAST_MARGIN_PERCENT):
        return None
    return rose_at


def settled_size(peak: int, least: int = 0) -> int:
    """The booking of a job settled at a working set's peak of `peak`, never under `least` (the
    largest recent peak of its own runs): that and LEAST_MARGIN_PERCENT."""
    return max(MIN_CAP, mib_ceil(max(peak, least) * (100 + LEAST_MARGIN_PERCENT) / 100))


def timing(runs: Sequence[PastRun]) -> list[PastRun]:
    """The `runs` that can say when jobs like them reach their peak: a run squeezed out of a
    full slice stopped where the slice ran out, which says nothing of that."""
    return [run for run in runs if not run.squeezed]


def settled_booking(
    held: Booking,
    runs: Sequence[PastRun],
    elapsed: float,
    peak: int,
    rose_at: float,
    least: int = 0,
) -> Booking | None:
    """What a running job books once it has surely reached its peak: its working set's peak so
    far (`peak`), or the largest recent peak of its own runs (`least`) where that is more, and
    LEAST_MARGIN_PERCENT (settled_size), when that is less than it holds, on the cap its cage
    has; None to keep what it holds. A run of a workload that peaked higher before may still
    get there: its history, not this run's start, says how high. The margin is the watch's:
    each run's working set stayed within it of its level once it last rose (jobwatch), so a
    job that does as its runs did never passes this booking; the margins of fiction, of a
    prior or of a single run cover a peak still to come, and there is none.

    Surely: FOLDER_LEAST_RUNS of `runs` (its family's recent runs, or failing them its
    folder's) ran at least as long as it has now (`elapsed` seconds), each reached its peak by
    `elapsed` / SETTLE_SLACK, none of `runs` hit its ceiling, and its own working set last rose
    (`rose_at`, seconds from its start) SETTLE_QUIET or more ago. A run squeezed out of a full
    slice is passed over (timing). Runs that ended sooner say nothing of what comes after
    them, so a long job in a folder of quick ones books what it holds. It stands where a
    prediction stands: killed first if its runs misled it, and past its booking it stands as
    outgrown (actions/standing.py). Issue 34: a first day's jobs held their caps, or their
    folder's share of them, 2–3× their peaks, to their end, and a second day's a tenth over
    theirs."""
    if held.via not in SETTLING or elapsed - rose_at < SETTLE_QUIET:
        return None
    timed = timing(runs)
    if any(run.hit_ceiling for run in timed):
        return None
    lasted = [
        run.peak_at for run in timed
        if run.peak_at is not None and run.duration is not None and run.duration >= elapsed
    ]
    if len(lasted) < FOLDER_LEAST_RUNS or max(lasted) * SETTLE_SLACK > elapsed:
        return None
    booked = settled_size(peak, least)
    if booked >= held.booked:
        return None
    return Booking(booked=booked, cap=held.cap, via=Via.SETTLED,
                   oom_score_adj=max(held.oom_score_adj, OOM_ADJ_PREDICTED))


def decide_admission(booked: int, book: MemoryBook, queued_ahead: int = 0) -> Decision:
    """Admit when the booking fits both rooms after the bookings of jobs queued before it;
    never when it exceeds the whole slice.

    Counting the jobs ahead keeps the queue in order: a small job may start beside a waiting
    big one only when the room holds both, so heavy jobs are not starved by small ones that
    keep taking the room they wait for.
    """
    if booked > book.slice_cap:
        return Decision.NEVER
    needed = booked + queued_ahead
    if needed <= book.usable:
        return Decision.ADMIT
    return Decision.WAIT


def hit_ceiling(
    peak: int, cap: int, killed_at_own_cap: bool, squeezed_over_booking: bool = False
) -> bool:
    """Whether a run is remembered as having hit its ceiling: killed at its cap, within 5 % of
    it, or squeezed out of a full slice (254) after growing past its booking. The squeezed
    one's peak is where it was cut off, not what it needs: like a run killed at its cap, its
    next booking is its cap, never that cut-off peak."""
    return killed_at_own_cap or squeezed_over_booking or peak >= cap * 0.95
