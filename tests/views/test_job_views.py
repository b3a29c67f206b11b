"""A job's ending in brief (the Jobs panel) keeps its exit code and is never wider than the
state column is from the start; in full (`swarmdeck status`, the detail) it is the runner's
words as they are."""

from __future__ import annotations

import pytest

from swarmdeck.probes.memory_book import LedgerJob
from swarmdeck.views.jobs import BRIEF_STATE_WIDTH, CEILING_MARK, outcome_text, peak_cell


def ended(code: int, outcome: str, hit_ceiling: bool = False) -> LedgerJob:
    return LedgerJob(
        id=1, label="make", host="box", state="done", argv=["make"], cwd="/", booked=1 << 30,
        cap=2 << 30, current=None, peak=1 << 30, kernel_peak=None, admitted_via="cap",
        oom_score_adj=0, created_at=0.0, admitted_at=0.0, started_at=0.0, ended_at=60.0,
        exit_code=code, outcome=outcome, hit_ceiling=hit_ceiling, cgroup=None, output_path=None,
        detached=False, runner_alive=None, threads=1,
    )


@pytest.mark.parametrize(
    ("code", "outcome", "brief"),
    [
        (250, "own cap", "own cap 250"),
        (253, "timed out", "timed out 253"),
        (254, "slice full", "slice full 254"),
        (254, "slice full, over booking", "slice full 254"),
        (254, "node_fail: not its fault", "node_fail 254"),
        (137, "killed by SIGKILL", "SIGKILL 137"),
        (143, "stopped: runner got SIGTERM", "stopped 143"),
        (127, "train.sh: command not found", "not found 127"),
        (7, "exit 7", "exit 7"),
        (3, "an ending nobody foresaw", "an ending… 3"),
    ],
)
def test_an_ending_in_brief_keeps_its_code_within_the_state_column(
    code: int, outcome: str, brief: str
) -> None:
    over = ended(code, outcome)
    assert outcome_text(over) == brief
    assert len(brief) <= BRIEF_STATE_WIDTH
    assert outcome_text(over, whole=True) == (brief if outcome == f"exit {code}"
                                               else f"{outcome} {code}")


def test_a_peak_is_marked_at_its_ceiling_only_where_the_job_reached_its_cap() -> None:
    """A job squeezed out of a full slice past its booking is remembered at its ceiling (its
    next run books its cap), but its peak stopped where the slice ran out: no mark says it
    reached its cap."""
    at_cap = ended(250, "own cap", hit_ceiling=True)
    squeezed = ended(254, "slice full, over booking", hit_ceiling=True)
    assert peak_cell(at_cap, brief=True).plain.endswith(CEILING_MARK)
    assert peak_cell(at_cap).plain.endswith("ceiling")
    assert peak_cell(squeezed, brief=True).plain == peak_cell(squeezed).plain == "1G"
