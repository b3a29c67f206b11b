"""A job's ending in brief (the Jobs panel) keeps its exit code and is never wider than the
state column is from the start; in full (`swarmdeck status`, the detail) it is the runner's
words as they are."""

from __future__ import annotations

import pytest

from swarmdeck.probes.memory_book import LedgerJob
from swarmdeck.views.jobs import BRIEF_STATE_WIDTH, outcome_text


def ended(code: int, outcome: str) -> LedgerJob:
    return LedgerJob(
        id=1, label="make", host="box", state="done", argv=["make"], cwd="/", booked=1 << 30,
        cap=2 << 30, current=None, peak=1 << 30, kernel_peak=None, admitted_via="cap",
        oom_score_adj=0, created_at=0.0, admitted_at=0.0, started_at=0.0, ended_at=60.0,
        exit_code=code, outcome=outcome, hit_ceiling=False, cgroup=None, output_path=None,
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
