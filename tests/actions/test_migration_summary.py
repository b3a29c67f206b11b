"""A migrate pane's line for one peer reads as a person writes: its GPUs as a count, "no GPU"
when it has none, and nothing about GPUs when its reading does not say; a running job is
refused naming the host it runs on, an ended one as over, with `r` to rerun it, and no option
is ever made for either."""

from __future__ import annotations

from pathlib import Path

import pytest

from swarmdeck.actions.migration import (
    MigrationOption,
    MigrationRefused,
    migration_options,
    refusal,
)
from swarmdeck.config import load_config
from swarmdeck.probes.machine import local_host_name
from swarmdeck.probes.memory_book import LedgerJob


def _option(gpus: str) -> MigrationOption:
    return MigrationOption("loopback", True, 2 << 30, 2, gpus, "", ("true",), "/", 6)


def test_a_peer_without_gpus_says_no_gpu_and_an_unknown_count_says_nothing() -> None:
    assert _option("0").summary() == "loopback: room 2G, 2 threads free, no GPU — fits now"
    assert _option("—").summary() == "loopback: room 2G, 2 threads free — fits now"
    assert _option("2").summary() == "loopback: room 2G, 2 threads free, GPUs 2 — fits now"


def _job(host: str, state: str, outcome: str | None = None) -> LedgerJob:
    return LedgerJob(
        id=6, label="suite", host=host, state=state, argv=["pytest"], cwd="/", booked=1, cap=1,
        current=None, peak=None, kernel_peak=None, admitted_via="cap", oom_score_adj=None,
        created_at=0.0, admitted_at=0.0, started_at=0.0, ended_at=None, exit_code=None,
        outcome=outcome, hit_ceiling=False, cgroup=None, output_path=None, detached=True,
        runner_alive=True,
    )


def test_a_running_job_is_refused_naming_where_it_runs() -> None:
    here = local_host_name()
    assert refusal(_job(here, "running")).startswith("job 6 is running here:")
    elsewhere = refusal(_job("loopback", "running"))
    assert elsewhere.startswith("job 6 is running on loopback:")
    assert "k on its finding" not in elsewhere
    assert refusal(_job(here, "queued")) is None


@pytest.mark.parametrize(("state", "outcome", "said"), [
    ("done", "killed by SIGTERM", "killed by SIGTERM"),
    ("done", "ok", "ok"),
    ("lost", None, "lost"),
    ("refused", "never fits", "never fits"),
    ("moved", "moved to box2 (job 7)", "moved to box2 (job 7)"),
])
def test_an_ended_job_is_over_and_r_reruns_it(state: str, outcome: str | None, said: str) -> None:
    assert refusal(_job(local_host_name(), state, outcome)) == (
        f"job 6 is over ({said}): nothing to migrate; r reruns it"
    )


def test_no_peer_is_offered_for_a_job_that_ended_or_runs(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text('[[hosts]]\nname = "box2"\naddress = "127.0.0.1"\n')
    config = load_config()
    assert [option.host for option in migration_options(config, _job("", "queued"))] == ["box2"]
    with pytest.raises(MigrationRefused, match=r"job 6 is over .*r reruns it"):
        migration_options(config, _job(local_host_name(), "done", "killed by SIGTERM"))
    with pytest.raises(MigrationRefused, match="would run it twice"):
        migration_options(config, _job(local_host_name(), "running"))
