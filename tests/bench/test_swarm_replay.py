"""bench/swarm_replay.py: the queue replayed as admission orders it, and the `--whole` figures
(the bound no schedule of whole jobs beats, and the first-fit schedule an ideal runner would
make), against which `bench/results/swarm.md` reads the queue."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

import pytest


@pytest.fixture
def replay(bench_module: Callable[[str], ModuleType]) -> ModuleType:
    """bench/swarm_replay.py as a module, as `bench/results/swarm.md` runs it."""
    return bench_module("swarm_replay")


def job(replay: ModuleType, share: float, runs: float) -> object:
    """A job there from the start that peaks at `share` of the slice for `runs` seconds."""
    return replay.Job(0.0, 0, int(replay.SLICE * share), runs, None, None)


def learned(replay: ModuleType, share: float, runs: float) -> object:
    """A job there from the start, booked at its peak of `share` of the slice, that runs
    `runs` seconds, as long as it ran before."""
    share_bytes = int(replay.SLICE * share)
    return replay.Job(0.0, share_bytes, share_bytes, runs, runs, runs)


def test_jobs_that_cannot_share_the_slice_are_bound_by_their_runs_not_their_area(
    replay: ModuleType,
) -> None:
    jobs = [job(replay, 0.6, 10.0) for _ in range(3)]
    assert replay.fluid_bound(jobs) == pytest.approx(18.0, rel=1e-3)
    assert replay.whole_bound(jobs) == pytest.approx(30.0)


def test_three_jobs_over_a_third_of_the_slice_run_two_at_a_time(replay: ModuleType) -> None:
    jobs = [job(replay, 0.4, 10.0) for _ in range(4)]
    assert replay.whole_bound(jobs) == pytest.approx(20.0)
    assert replay.first_fit(jobs, [0, 1, 2, 3]) == pytest.approx(20.0)


def test_the_whole_jobs_bound_is_the_fluid_one_where_jobs_pack_without_crowding(
    replay: ModuleType,
) -> None:
    jobs = [job(replay, 0.25, 8.0) for _ in range(8)]
    assert replay.whole_bound(jobs) == pytest.approx(replay.fluid_bound(jobs))


def test_first_fit_lets_a_later_job_in_beside_one_that_does_not_fit(
    replay: ModuleType,
) -> None:
    jobs = [job(replay, 0.7, 10.0), job(replay, 0.7, 10.0), job(replay, 0.3, 15.0)]
    assert replay.first_fit(jobs, [0, 1, 2]) == pytest.approx(20.0)


def test_the_best_schedule_found_is_no_longer_than_any_order_tried(replay: ModuleType) -> None:
    jobs = [job(replay, 0.5, 10.0), job(replay, 0.5, 1.0), job(replay, 0.5, 1.0),
            job(replay, 0.5, 10.0)]
    assert replay.first_fit(jobs, [0, 1, 2, 3]) == pytest.approx(12.0)
    assert replay.first_fit(jobs, replay.best_order(jobs, 50)) == pytest.approx(11.0)


def test_first_fit_from_running_jobs_waits_for_the_room_they_give_back(
    replay: ModuleType,
) -> None:
    jobs = [job(replay, 0.5, 4.0)]
    running = [(3.0, int(replay.SLICE * 0.6))]
    assert replay.first_fit(jobs, [0], running) == pytest.approx(7.0)


def test_a_queue_knows_each_run_as_its_longest_earlier_run(replay: ModuleType) -> None:
    known = replay.Job(0.0, 0, 10, 9.0, 4.0, 6.0)
    new = replay.Job(0.0, 0, 10, 9.0, None, None)
    assert [job.runs for job in replay.as_learned([known, new])] == [6.0, 9.0]


def test_the_best_order_on_the_learned_runs_is_chosen_before_the_day_runs(
    replay: ModuleType,
) -> None:
    """Four jobs of 0.3 of the slice, three at a time: two ran 4 s and two 2 s, but one of the
    4 s jobs had run 1 s before. Chosen on the day's runs, the long pair starts first and the
    day ends at 4 s; chosen on the learned runs, that job starts last and it ends at 6 s."""
    def job_of(runs: float, learned: float) -> object:
        return replay.Job(0.0, 0, int(replay.SLICE * 0.3), runs, learned, learned)

    jobs = [job_of(2.0, 2.0), job_of(4.0, 2.0), job_of(4.0, 1.0), job_of(2.0, 2.0)]
    assert replay.first_fit(jobs, replay.best_order(jobs, 50)) == pytest.approx(4.0)
    learned = replay.best_order(replay.as_learned(jobs), 50)
    assert replay.first_fit(jobs, learned) == pytest.approx(6.0)


def test_the_replay_plays_the_queues_order_as_admission_takes_it(replay: ModuleType) -> None:
    """Two jobs of 0.4 of the slice that run 5 s and two of 0.6 that run 4 s, learned so, all
    arriving together: longest first alone runs the small pair, then the big jobs one after the
    other (13 s). As built, admission's order starts a big one beside a small one; when the big
    one ends, the other small one goes next, as the order that ends sooner then, and the last
    big one starts as the first small one ends (9 s)."""
    from swarmdeck.actions.backfill import longest_first

    jobs = [learned(replay, 0.4, 5.0), learned(replay, 0.4, 5.0), learned(replay, 0.6, 4.0),
            learned(replay, 0.6, 4.0)]
    assert replay.replay(jobs, replay.alone(longest_first)) == pytest.approx(13.0)
    assert replay.replay(jobs, replay.as_built) == pytest.approx(9.0)


def test_the_searched_order_plays_out_the_learned_runs_of_more_orders(replay: ModuleType) -> None:
    """Two small jobs (0.2 of the slice, 6 s and 5 s) and two big ones (0.7, 2 s and 3 s): the
    built queue runs the small pair first, and the big ones one after the other (10 s); the
    search starts the short big one beside the shorter small one, and the long big one takes
    that small one's room when it ends (8 s)."""
    jobs = [learned(replay, 0.2, 6.0), learned(replay, 0.7, 2.0), learned(replay, 0.7, 3.0),
            learned(replay, 0.2, 5.0)]
    assert replay.replay(jobs, replay.as_built) == pytest.approx(10.0)
    assert replay.replay(jobs, replay.searched) == pytest.approx(8.0)
