"""A real single-node Slurm for the whole test run, and a config pointing swarmdeck at it.

The cluster starts once per run (session scope) and is stopped at the end. Where the Slurm,
munge or MariaDB binaries are missing, every test here is skipped with one line saying why.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from slurmkit import SlurmCluster, wait_for, why_no_cluster


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmCluster]:
    why = why_no_cluster()
    if why:
        pytest.skip(why)
    cluster = SlurmCluster(tmp_path_factory.mktemp("slurm"))
    try:
        cluster.start()
        print(f"\ntest Slurm cluster up in {cluster.started_in:.1f} s", file=sys.stderr)
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def slurm_config(isolated_home: Path, slurm_cluster: SlurmCluster) -> Path:
    """This test's config file: [slurm] enabled on the test cluster, quick polling."""
    path = isolated_home / "config.toml"
    path.write_text(
        "[memory]\n"
        'default_prediction = "256M"\n'
        "[slurm]\n"
        "enabled = true\n"
        f'conf = "{slurm_cluster.conf}"\n'
        "poll_interval = 0.1\n"
        "timeout = 5\n"
    )
    return path


@pytest.fixture
def no_job_left(slurm_cluster: SlurmCluster) -> Iterator[None]:
    """The test leaves the queue empty: a job it cancelled may take a moment to leave
    (COMPLETING); one still queued after that was left behind."""
    yield
    try:
        wait_for(lambda: not slurm_cluster.jobs_in_queue(), "the queue empty", 20)
    except RuntimeError:
        left = slurm_cluster.jobs_in_queue()
        slurm_cluster.run("scancel", *left, check=False)
        pytest.fail(f"jobs left in the queue: {left}")
