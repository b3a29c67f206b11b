"""The memory book's rules as pure decisions: booking, cap, OOM standing, admission."""

from __future__ import annotations

import math

import pytest

from swarmdeck.actions.booking import (
    OOM_ADJ_ON_CAP,
    OOM_ADJ_PREDICTED,
    OOM_ADJ_UNBOUNDED,
    Booking,
    Decision,
    PastRun,
    Via,
    decide_admission,
    decide_booking,
    folder_growth,
    folder_spread,
    hit_ceiling,
    lighter_booking,
    mib_ceil,
    peak_time,
    settled_booking,
)
from swarmdeck.probes.memory_book import MemoryBook

MIB = 1 << 20
GIB = 1 << 30
SLICE = 20 * GIB


def book(unreclaimable: int = 0, not_yet_grown: int = 0, available: int = 30 * GIB) -> MemoryBook:
    return MemoryBook(
        host="h", slice_cap=SLICE, unreclaimable=unreclaimable, not_yet_grown=not_yet_grown,
        mem_total=32 * GIB, mem_available=available, margin=256 * MIB, backend="cgroup-v1",
        slice_path="/s", placement="configured", problem="",
    )


def booking(history=(), cap=None, unbounded=False):
    return decide_booking(
        list(history), declared_cap=cap, default_prediction=GIB, cap_factor=1.5,
        unbounded=unbounded, slice_cap=SLICE,
    )


def test_no_history_and_no_cap_books_the_default_prediction() -> None:
    result = booking()
    assert (result.booked, result.via, result.cap) == (GIB, Via.DEFAULT, 1536 * MIB)
    assert result.oom_score_adj == OOM_ADJ_PREDICTED


def test_no_history_books_the_declared_cap_so_a_huge_cap_never_fits() -> None:
    result = booking(cap=100 * GIB)
    assert (result.booked, result.cap, result.via) == (100 * GIB, 100 * GIB, Via.CAP)
    assert result.oom_score_adj == OOM_ADJ_ON_CAP
    assert decide_admission(result.booked, book()) is Decision.NEVER


def test_history_books_the_largest_recent_peak_with_headroom() -> None:
    runs = [PastRun(100 * MIB, GIB, False), PastRun(400 * MIB, GIB, False)]
    result = booking(runs)
    assert result.via is Via.HISTORY
    assert result.booked == 440 * MIB
    assert result.cap == 660 * MIB


def test_runs_that_peak_alike_are_booked_close_to_their_peak() -> None:
    runs = [PastRun(400 * MIB, GIB, False), PastRun(399 * MIB, GIB, False)]
    assert booking(runs).booked == 408 * MIB, "2 %, not a fixed tenth"
    spread = [PastRun(380 * MIB, GIB, False), PastRun(400 * MIB, GIB, False)]
    assert booking(spread).booked == 420 * MIB, "their 5 % spread"


def test_a_workload_that_grows_each_run_is_booked_one_step_ahead() -> None:
    runs = [PastRun(460 * MIB, GIB, False), PastRun(400 * MIB, GIB, False)]
    assert booking(runs).booked >= 520 * MIB
    shrinking = [PastRun(400 * MIB, GIB, False), PastRun(460 * MIB, GIB, False)]
    assert booking(shrinking).booked < 520 * MIB


def test_a_command_with_no_history_books_its_familys_prior_and_is_killed_first() -> None:
    kin = [PastRun(300 * MIB, GIB, False), PastRun(280 * MIB, GIB, False)]
    result = decide_booking([], declared_cap=2 * GIB, default_prediction=GIB, cap_factor=1.5,
                            unbounded=False, slice_cap=SLICE, family=kin)
    assert (result.booked, result.cap, result.via) == (321 * MIB, 2 * GIB, Via.FAMILY)
    assert result.oom_score_adj == OOM_ADJ_PREDICTED
    ceiling = [PastRun(300 * MIB, 300 * MIB, True)]
    fallback = decide_booking([], declared_cap=2 * GIB, default_prediction=GIB, cap_factor=1.5,
                              unbounded=False, slice_cap=SLICE, family=ceiling)
    assert fallback.via is Via.CAP, "a family that hit its ceiling is no prior"


def test_a_capped_command_with_no_history_books_the_share_its_folder_reached() -> None:
    """Capped runs in the folder peaked at a fifth to a quarter of their caps: a new command
    there books a quarter of its cap and a tenth, killed first if that was wrong; fewer runs,
    or one at its ceiling, are no prior."""
    folder = [PastRun(200 * MIB, GIB, False), PastRun(GIB // 4, GIB, False),
              PastRun(100 * MIB, 500 * MIB, False)]
    result = decide_booking([], declared_cap=2 * GIB, default_prediction=GIB, cap_factor=1.5,
                            unbounded=False, slice_cap=SLICE, folder=folder)
    assert (result.booked, result.cap, result.via) == (mib_ceil(GIB * 1.1 / 2), 2 * GIB,
                                                       Via.FOLDER)
    assert result.oom_score_adj == OOM_ADJ_PREDICTED
    for no_prior in (folder[:2], [*folder, PastRun(GIB, GIB, True)]):
        fallback = decide_booking([], declared_cap=2 * GIB, default_prediction=GIB,
                                  cap_factor=1.5, unbounded=False, slice_cap=SLICE,
                                  folder=no_prior)
        assert (fallback.booked, fallback.via) == (2 * GIB, Via.CAP)


def test_a_running_job_of_fiction_books_less_once_its_folder_shows_how_much_less() -> None:
    """Admitted on its 2G cap, a job whose folder now shows jobs there take at most half of
    a cap (and a tenth) books that, killed first if it was wrong; its cage keeps its cap."""
    held = booking(cap=2 * GIB)
    folder = [PastRun(200 * MIB, GIB, False), PastRun(GIB // 4, GIB, False),
              PastRun(100 * MIB, 500 * MIB, False)]
    fresh = decide_booking([], declared_cap=2 * GIB, default_prediction=GIB, cap_factor=1.5,
                           unbounded=False, slice_cap=SLICE, folder=folder)
    lighter = lighter_booking(held, fresh, peak=300 * MIB)
    assert lighter is not None
    assert (lighter.booked, lighter.cap, lighter.via) == (fresh.booked, 2 * GIB, Via.FOLDER)
    assert lighter.oom_score_adj == OOM_ADJ_PREDICTED


def test_a_running_job_keeps_its_booking_when_it_took_more_already_or_nothing_is_less() -> None:
    """A job whose working set passed what its folder would book it keeps what it holds (it
    would stand as outgrown at once); so does one nothing new would book for less."""
    held = booking(cap=2 * GIB)
    folder = [PastRun(200 * MIB, GIB, False)] * 3
    fresh = decide_booking([], declared_cap=2 * GIB, default_prediction=GIB, cap_factor=1.5,
                           unbounded=False, slice_cap=SLICE, folder=folder)
    assert lighter_booking(held, fresh, peak=fresh.booked + 64 * MIB) is None
    assert lighter_booking(held, None, peak=0) is None
    assert lighter_booking(held, held, peak=0) is None


def timed(peak_at: float, duration: float, ceiling: bool = False) -> PastRun:
    """A recorded run of 400M on a 2G cap that reached its peak `peak_at` seconds in."""
    return PastRun(400 * MIB, 2 * GIB, ceiling, peak_at=peak_at, duration=duration)


def test_a_running_job_books_its_working_set_once_its_runs_show_it_has_reached_its_peak() -> None:
    """Issue 34's first day: jobs of fiction hold their caps, or their folder's share of
    them, to their end, while they took their peak within a second. Where three runs that
    lasted as long as the job has run now all reached their peak by two thirds of that time,
    and its own working set has stopped rising, the job books that working set and the 2 %
    within which the runs' working sets stayed once level: killed first if it was wrong, on
    the cap its cage has."""
    held = booking(cap=2 * GIB)
    runs = [timed(0.5, 6.0), timed(1.0, 9.0), timed(0.5, 4.5)]
    settled = settled_booking(held, runs, elapsed=1.5, peak=300 * MIB, rose_at=0.5)
    assert settled is not None
    assert (settled.booked, settled.cap, settled.via) == (mib_ceil(306 * MIB), 2 * GIB, Via.SETTLED)
    assert settled.oom_score_adj == OOM_ADJ_PREDICTED


@pytest.mark.parametrize(
    ("runs", "elapsed", "rose_at", "why"),
    [
        ([timed(0.5, 6.0), timed(1.0, 9.0), timed(0.5, 4.5)], 1.4, 0.2,
         "its runs took up to 1 s to reach their peak: 1.5 s is the least to be sure"),
        ([timed(0.5, 6.0), timed(1.0, 9.0)], 3.0, 0.5, "two runs are a guess"),
        ([timed(0.5, 6.0), timed(1.0, 9.0), timed(0.5, 2.0)], 3.0, 0.5,
         "a run that ended before 3 s says nothing of what comes after it"),
        ([timed(0.5, 6.0), timed(4.0, 9.0), timed(0.5, 4.5)], 3.0, 0.5,
         "one run that lasted this long took its peak at 4 s"),
        ([timed(0.5, 6.0), timed(1.0, 9.0), timed(0.5, 4.5, ceiling=True)], 3.0, 0.5,
         "a run stopped at its ceiling did not show its peak"),
        ([timed(0.5, 6.0), timed(1.0, 9.0), PastRun(400 * MIB, 2 * GIB, False, duration=9.0)],
         3.0, 0.5, "a run recorded without the time of its peak"),
        ([timed(0.5, 6.0), timed(1.0, 9.0), timed(0.5, 4.5)], 3.0, 2.5,
         "its own working set rose half a second ago: it is still climbing"),
    ],
)
def test_a_running_job_keeps_its_booking_until_its_runs_show_it_has_peaked(
    runs: list[PastRun], elapsed: float, rose_at: float, why: str
) -> None:
    held = booking(cap=2 * GIB)
    assert settled_booking(held, runs, elapsed, peak=300 * MIB, rose_at=rose_at) is None, why


def test_a_second_day_job_gives_back_the_margin_of_a_single_run_once_it_has_peaked() -> None:
    """Booked on its one run's peak and a tenth, a job that has reached its peak as its
    folder's runs did books that peak and 2 %: the tenth was for a peak still to come."""
    runs = [timed(0.5, 6.0), timed(1.0, 9.0), timed(0.5, 4.5)]
    learned = Booking(330 * MIB, 2 * GIB, Via.HISTORY, OOM_ADJ_PREDICTED)
    settled = settled_booking(learned, runs, 3.0, peak=300 * MIB, rose_at=0.5)
    assert settled is not None and settled.booked == mib_ceil(306 * MIB)


def test_a_settled_job_books_no_less_than_its_own_runs_peaked() -> None:
    """A run of a workload that peaked at 500M before is booked for 500M and 2 % however low
    its working set has stayed: its history, not this run's start, says how high it goes."""
    runs = [timed(0.5, 6.0), timed(1.0, 9.0), timed(0.5, 4.5)]
    learned = Booking(550 * MIB, 2 * GIB, Via.HISTORY, OOM_ADJ_PREDICTED)
    settled = settled_booking(learned, runs, 3.0, peak=300 * MIB, rose_at=0.5,
                              least=500 * MIB)
    assert settled is not None and settled.booked == mib_ceil(510 * MIB)
    tight = Booking(510 * MIB, 2 * GIB, Via.HISTORY, OOM_ADJ_PREDICTED)
    assert settled_booking(tight, runs, 3.0, peak=300 * MIB, rose_at=0.5,
                           least=500 * MIB) is None


def test_a_peak_the_samples_did_not_see_has_no_time() -> None:
    """The peak a run records is the larger of its samples' and the kernel's high-water mark:
    when the samples saw it (within 2 %), it was reached when they last rose; a spike between
    samples, or a run never sampled, says nothing of when."""
    assert peak_time(recorded=102 * MIB, sampled=100 * MIB, rose_at=1.5) == 1.5
    assert peak_time(recorded=110 * MIB, sampled=100 * MIB, rose_at=1.5) is None
    assert peak_time(recorded=8 * MIB, sampled=0, rose_at=0.0) is None


def test_a_settled_booking_never_raises_a_booking_nor_lowers_a_ceiling() -> None:
    """A job whose working set and its 2 % are already what it holds keeps it; a job booked on
    the ceiling a run was stopped at, or settled already, books what that said."""
    runs = [timed(0.5, 6.0), timed(1.0, 9.0), timed(0.5, 4.5)]
    held = booking(cap=2 * GIB)
    assert settled_booking(held, runs, 3.0, peak=held.booked, rose_at=0.5) is None
    for via in (Via.CEILING, Via.SETTLED):
        kept = Booking(GIB, 2 * GIB, via, OOM_ADJ_PREDICTED)
        assert settled_booking(kept, runs, 3.0, peak=300 * MIB, rose_at=0.5) is None


def runs_of(*peaks_mib: int, ceiling: bool = False) -> list[PastRun]:
    return [PastRun(peak * MIB, 4 * GIB, ceiling) for peak in peaks_mib]


def test_a_single_run_books_the_margin_its_folders_workloads_repeat_within() -> None:
    """Three other workloads in the folder peaked within 1 %, 3 % and 4 % of their last run: a
    workload with one run there books its peak + 4 %, not + 10 %; with no such evidence, a
    tenth; the margin stays within 2 % and a tenth whatever the folder shows."""
    spread = folder_spread([runs_of(1000, 990), runs_of(500, 485, 490), runs_of(200, 192)])
    assert spread == 4
    one = [PastRun(1000 * MIB, 4 * GIB, False)]
    learned = decide_booking(one, declared_cap=None, default_prediction=GIB, cap_factor=1.5,
                             unbounded=False, slice_cap=SLICE, spread=spread)
    assert (learned.booked, learned.via) == (1040 * MIB, Via.HISTORY)
    assert learned.oom_score_adj == OOM_ADJ_PREDICTED
    assert booking(one).booked == 1100 * MIB, "no spread known: a tenth"
    for given, margin in ((0, 2), (1, 2), (25, 10)):
        bounded = decide_booking(one, declared_cap=None, default_prediction=GIB,
                                 cap_factor=1.5, unbounded=False, slice_cap=SLICE,
                                 spread=given)
        assert bounded.booked == (1000 + 10 * margin) * MIB
    two = [PastRun(1000 * MIB, 4 * GIB, False), PastRun(800 * MIB, 4 * GIB, False)]
    own = decide_booking(two, declared_cap=None, default_prediction=GIB, cap_factor=1.5,
                         unbounded=False, slice_cap=SLICE, spread=2)
    assert own.booked == booking(two).booked, "a workload with a spread of its own keeps it"


def test_a_folder_shows_a_spread_only_from_enough_repeated_workloads_none_at_a_ceiling() -> None:
    """Fewer than three workloads run twice, or one that hit its ceiling, is no evidence; a
    workload run once says nothing of its spread; a folder that grows shows its growth."""
    alike = [runs_of(1000, 990), runs_of(500, 485), runs_of(200, 192)]
    assert folder_spread([*alike[:2], runs_of(300)]) is None
    assert folder_spread([*alike, runs_of(900, 600, ceiling=True)]) is None
    assert folder_spread([*alike, runs_of(1150, 1000)]) == 10, "15 % growth: a tenth stays"


def test_a_single_run_books_the_growth_its_folders_workloads_all_showed() -> None:
    """Issue 34 (drifting): every workload of a folder peaks 15 % higher each day. On the
    second day a workload with one run booked its peak + 10 % and was cut off past it, so the
    slice filled again and again. Once three other workloads there ran twice and each grew by
    more than the noise, a single run books the largest step they showed, and its margin on
    top; a folder where one workload kept level, or too few ran twice, shows no growth."""
    grown = [runs_of(1150, 1000), runs_of(560, 500), runs_of(220, 200)]
    assert folder_growth(grown) == 15
    assert folder_growth([*grown, runs_of(300, 300)]) is None, "one kept level: no trend"
    assert folder_growth(grown[:2]) is None
    assert folder_growth([*grown, runs_of(900)]) == 15, "a workload run once says nothing"
    cut = [PastRun(1300 * MIB, 4 * GIB, True), PastRun(1000 * MIB, 4 * GIB, False)]
    assert folder_growth([*grown, cut]) == 15, "a run cut off at its ceiling is passed over"
    assert folder_growth([runs_of(1010, 1000), *grown[1:], runs_of(300, 290)]) is None
    one = [PastRun(1000 * MIB, 4 * GIB, False)]
    learned = decide_booking(one, declared_cap=None, default_prediction=GIB, cap_factor=1.5,
                             unbounded=False, slice_cap=SLICE, growth_step=15)
    assert (learned.booked, learned.via) == (1265 * MIB, Via.HISTORY)
    assert learned.oom_score_adj == OOM_ADJ_PREDICTED
    two = [PastRun(1000 * MIB, 4 * GIB, False), PastRun(1000 * MIB, 4 * GIB, False)]
    own = decide_booking(two, declared_cap=None, default_prediction=GIB, cap_factor=1.5,
                         unbounded=False, slice_cap=SLICE, growth_step=15)
    assert own.booked == booking(two).booked, "a workload with runs of its own: its own trend"


def test_a_single_run_books_a_tenths_growth_while_its_folders_workloads_run_past_theirs() -> None:
    """Issue 34 (drifting): a day's first wave grows past the bookings of its single runs before
    any of it ends, and what queues behind it would fill the slice again. While three other
    workloads of the folder run past their bookings now (a booking is their peak and their
    margin: they grew by more than a tenth), a single run grows its peak by a tenth at least."""
    assert folder_growth([], outgrowing=3) == 10
    assert folder_growth([], outgrowing=2) is None
    grown = [runs_of(1150, 1000), runs_of(575, 500), runs_of(345, 300)]
    assert folder_growth(grown, outgrowing=3) == 15, "the growth shown, where it is more"
    level = [runs_of(1030, 1000), runs_of(515, 500), runs_of(309, 300)]
    assert folder_growth(level, outgrowing=3) == 10
    assert folder_growth(level) == 3


def test_one_small_run_does_not_erase_a_big_one() -> None:
    runs = [PastRun(10 * MIB, GIB, False), PastRun(800 * MIB, GIB, False)]
    assert booking(runs).booked >= 800 * MIB


def test_only_the_recent_window_counts() -> None:
    runs = [PastRun(10 * MIB, GIB, False)] * 5 + [PastRun(800 * MIB, GIB, False)]
    assert booking(runs).booked < 800 * MIB


def test_history_never_books_more_than_the_declared_cap() -> None:
    result = booking([PastRun(3 * GIB, 4 * GIB, False)], cap=2 * GIB)
    assert (result.booked, result.cap, result.via) == (2 * GIB, 2 * GIB, Via.CAP)
    assert result.oom_score_adj == OOM_ADJ_ON_CAP


def test_a_run_that_hit_its_ceiling_makes_the_next_book_its_cap() -> None:
    result = booking([PastRun(512 * MIB, 512 * MIB, True)])
    assert (result.booked, result.via) == (512 * MIB, Via.CEILING)
    assert result.cap == 768 * MIB


def test_a_ceiling_booking_without_a_declared_cap_stands_as_a_cap_booking() -> None:
    result = booking([PastRun(512 * MIB, 512 * MIB, True)])
    assert result.oom_score_adj == OOM_ADJ_ON_CAP


def test_a_squeezed_run_over_its_booking_is_remembered_at_its_ceiling() -> None:
    assert hit_ceiling(70 * MIB, 80 * MIB, killed_at_own_cap=False, squeezed_over_booking=True)


def squeezed(peak: int, cap: int, peak_at: float | None = None,
             duration: float | None = None) -> PastRun:
    """A run squeezed out of a full slice (254) at `peak`, past its booking."""
    return PastRun(peak, cap, True, peak_at=peak_at, duration=duration, squeezed=True)


def test_a_run_after_one_squeezed_out_books_its_cap_as_fiction_that_settles() -> None:
    """Issue 34's drifting day: a job cut off by a full slice at 420M of its 2G cap is booked
    its cap next time, at the standing of a cap booking, not the cut-off peak as a guess. The
    slice ran out there, not its cap: the cap is as much fiction as any declared one, so once
    the job has peaked as its folder's runs did it books its working set, and the 1.6G it does
    not take goes back to the queue. A run stopped at its own cap books its ceiling to its end."""
    again = booking([squeezed(420 * MIB, 2 * GIB), PastRun(380 * MIB, 2 * GIB, False)],
                    cap=2 * GIB)
    assert (again.booked, again.cap, again.via) == (2 * GIB, 2 * GIB, Via.SQUEEZED)
    assert again.oom_score_adj == OOM_ADJ_ON_CAP
    runs = [timed(0.5, 6.0), timed(1.0, 9.0), timed(0.5, 4.5)]
    settled = settled_booking(again, runs, 3.0, peak=430 * MIB, rose_at=0.5, least=420 * MIB)
    assert settled is not None and settled.booked == mib_ceil(430 * MIB * 102 // 100)
    assert (settled.via, settled.oom_score_adj) == (Via.SETTLED, OOM_ADJ_PREDICTED)
    made = booking([squeezed(70 * MIB, 80 * MIB)])
    assert (made.booked, made.via, made.oom_score_adj) == (80 * MIB, Via.SQUEEZED, OOM_ADJ_ON_CAP)
    own = booking([PastRun(2 * GIB, 2 * GIB, True), squeezed(420 * MIB, 2 * GIB)], cap=2 * GIB)
    assert (own.booked, own.via) == (2 * GIB, Via.CEILING)
    assert settled_booking(own, runs, 3.0, peak=430 * MIB, rose_at=0.5) is None


def test_a_run_squeezed_out_of_a_full_slice_neither_stops_nor_times_settling() -> None:
    """Where it was cut off says nothing of when jobs like it peak: the folder's other jobs
    settle beside it (on the drifting day, one squeeze held every booking of the folder a
    tenth over its peak until the squeezed run left the folder's last 20), and it is not one
    of the three runs that show when they peak."""
    held = booking(cap=2 * GIB)
    runs = [timed(0.5, 6.0), timed(1.0, 9.0), timed(0.5, 4.5)]
    cut = squeezed(400 * MIB, 2 * GIB, peak_at=0.4, duration=2.0)
    assert settled_booking(held, [cut, *runs], 3.0, peak=300 * MIB, rose_at=0.5) is not None
    long_cut = squeezed(400 * MIB, 2 * GIB, peak_at=0.4, duration=9.0)
    assert settled_booking(held, [long_cut, *runs[:2]], 3.0, peak=300 * MIB,
                           rose_at=0.5) is None


def test_a_learned_cap_under_the_floor_is_raised_to_it() -> None:
    from swarmdeck.actions.run_request import MIN_CAP

    result = booking([PastRun(MIB, 4 * MIB, False)])
    assert result.booked == 2 * MIB and result.cap == MIN_CAP


def test_a_ceiling_with_the_same_declared_cap_books_the_cap_at_adj_0() -> None:
    result = booking([PastRun(512 * MIB, 512 * MIB, True)], cap=512 * MIB)
    assert (result.booked, result.cap, result.oom_score_adj) == (512 * MIB, 512 * MIB, 0)


def test_a_ceiling_with_a_larger_declared_cap_books_that_cap() -> None:
    result = booking([PastRun(64 * MIB, 64 * MIB, True)], cap=128 * MIB)
    assert (result.booked, result.cap, result.via) == (128 * MIB, 128 * MIB, Via.CEILING)
    assert result.oom_score_adj == OOM_ADJ_ON_CAP


def test_a_ceiling_in_the_window_books_the_declared_cap_over_the_prediction() -> None:
    # It needed more than the cap it hit; the prediction from the run that fitted is no bound.
    runs = [PastRun(64 * MIB, 64 * MIB, True), PastRun(100 * MIB, 512 * MIB, False)]
    result = booking(runs, cap=GIB)
    assert (result.booked, result.cap, result.via) == (GIB, GIB, Via.CEILING)


def test_a_ceiling_with_a_smaller_declared_cap_books_that_cap() -> None:
    result = booking([PastRun(512 * MIB, 512 * MIB, True)], cap=256 * MIB)
    assert (result.booked, result.cap, result.via) == (256 * MIB, 256 * MIB, Via.CEILING)


def test_unbounded_may_grow_to_the_slice_and_is_killed_first() -> None:
    result = booking(unbounded=True)
    assert result.cap == SLICE and result.oom_score_adj == OOM_ADJ_UNBOUNDED


def test_an_unbounded_job_with_no_history_books_the_default_prediction_where_it_fits() -> None:
    result = booking(unbounded=True)
    assert (result.booked, result.via) == (GIB, Via.DEFAULT)


def test_an_unbounded_job_is_never_refused_because_the_default_prediction_exceeds_the_slice(
) -> None:
    """A default prediction above the whole slice is a guess, not a declaration: the job that
    may grow to the slice books the slice, and waits for it, rather than never running."""
    result = decide_booking(
        [], declared_cap=None, default_prediction=GIB, cap_factor=1.5, unbounded=True,
        slice_cap=553 * MIB,
    )
    assert (result.booked, result.cap, result.via) == (553 * MIB, 553 * MIB, Via.DEFAULT)
    assert result.oom_score_adj == OOM_ADJ_UNBOUNDED
    small = MemoryBook(
        host="h", slice_cap=553 * MIB, unreclaimable=0, not_yet_grown=0, mem_total=2 * GIB,
        mem_available=2 * GIB, margin=MIB, backend="cgroup-v1", slice_path="/s",
        placement="configured", problem="",
    )
    assert decide_admission(result.booked, small) is Decision.ADMIT


def test_an_unbounded_job_never_books_more_than_the_slice_it_is_capped_at() -> None:
    result = booking([PastRun(30 * GIB, 40 * GIB, False)], unbounded=True)
    assert (result.booked, result.cap) == (SLICE, SLICE)


def test_admission_needs_room_in_the_slice() -> None:
    assert decide_admission(GIB, book(unreclaimable=SLICE - GIB)) is Decision.ADMIT
    assert decide_admission(GIB, book(unreclaimable=SLICE - GIB + 1)) is Decision.WAIT


def test_bookings_not_yet_grown_take_room() -> None:
    assert decide_admission(GIB, book(not_yet_grown=SLICE - GIB // 2)) is Decision.WAIT


def test_admission_needs_room_in_the_machine_beyond_the_margin() -> None:
    assert decide_admission(GIB, book(available=GIB + 256 * MIB)) is Decision.ADMIT
    assert decide_admission(GIB, book(available=GIB + 255 * MIB)) is Decision.WAIT


def test_the_book_adds_up() -> None:
    b = book(unreclaimable=5 * GIB, not_yet_grown=2 * GIB, available=20 * GIB)
    assert b.room == 13 * GIB
    assert b.machine_room == 18 * GIB - 256 * MIB
    assert b.usable == 13 * GIB
    assert b.used_outside_slice == 7 * GIB
    assert [name for name, _ in b.bar()] == [
        "outside the slice", "slice used", "booked, not yet grown", "room",
    ]


def test_hit_ceiling_is_a_kill_at_the_cap_or_a_peak_within_5_percent() -> None:
    assert hit_ceiling(10, 100, killed_at_own_cap=True)
    assert hit_ceiling(96, 100, killed_at_own_cap=False)
    assert not hit_ceiling(90, 100, killed_at_own_cap=False)


def test_a_book_with_no_room_left_shows_zero_room_never_less() -> None:
    """A slice of 0 that still holds some kernel memory, on a machine below its margin: the
    rooms are nothing, not a debt."""
    empty = MemoryBook(
        host="h", slice_cap=0, unreclaimable=4 * MIB, not_yet_grown=0,
        mem_total=32 * GIB, mem_available=128 * MIB, margin=256 * MIB, backend="cgroup-v1",
        slice_path="/s", placement="configured", problem="",
    )
    assert (empty.room, empty.machine_room, empty.usable) == (0, 0, 0)
    assert empty.to_json()["room"] == 0 and empty.host_fields()["machine_room"] == 0
    assert dict(empty.bar())["room"] == 0


def test_a_booking_of_nothing_is_admitted_into_zero_room() -> None:
    full = MemoryBook(
        host="h", slice_cap=0, unreclaimable=4 * MIB, not_yet_grown=0,
        mem_total=32 * GIB, mem_available=128 * MIB, margin=256 * MIB, backend="cgroup-v1",
        slice_path="/s", placement="configured", problem="",
    )
    assert decide_admission(0, full) is Decision.ADMIT
    assert decide_admission(1, full) is Decision.NEVER


@pytest.mark.parametrize(
    "size", [0, 1, (1 << 20) - 1, 1 << 20, (1 << 20) + 1, 1.5 * (1 << 20), 3 * (1 << 30) * 1.25,
             64 * (1 << 40) + 0.5]
)
def test_mib_ceil_rounds_up_to_whole_mib_as_math_ceil(size: float) -> None:
    assert mib_ceil(size) == math.ceil(size / MIB) * MIB
    assert isinstance(mib_ceil(size), int)
