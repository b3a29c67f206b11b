"""A real single-node Slurm for the whole test run, and a config pointing swarmdeck at it.

The cluster starts once per run (session scope) and is stopped at the end. Where the Slurm,
munge or MariaDB binaries are missing, the tests that need the cluster are left out and the
run says so in one line, with why, at the end of its summary.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from slurmkit import ClusterBusy, SlurmCluster, wait_for, why_no_cluster

HERE = Path(__file__).parent
_left_out: list[str] = []
_running: list[SlurmCluster] = []
"""The cluster while it runs, so it can be stopped as soon as the last test here is done."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every test here runs in one worker (xdist's loadgroup), one after another: the machine
    has room for one cluster, and it is stopped after the last of them. Where the binaries are
    missing, the tests that need the cluster are left out."""
    for item in items:
        if HERE in item.path.parents:
            item.add_marker(pytest.mark.xdist_group("slurm"))
    why = why_no_cluster()
    if not why:
        return
    needs = [
        item for item in items
        if HERE in item.path.parents and "slurm_cluster" in getattr(item, "fixturenames", ())
    ]
    if needs:
        _left_out[:] = [why, str(len(needs))]
        config.hook.pytest_deselected(items=needs)
        items[:] = [item for item in items if item not in needs]


def pytest_terminal_summary(terminalreporter) -> None:
    if _left_out:
        why, count = _left_out
        terminalreporter.write_line(f"{why} ({count} tests)", yellow=True)


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """Stop the cluster after the last test here rather than at the end of the whole run, so
    another run on this machine waits for it only as long as these tests take (after the test's
own fixtures are torn down: trylast)."""
    if _running and (nextitem is None or HERE not in nextitem.path.parents):
        _running.pop().stop()


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmCluster]:
    why = why_no_cluster()
    if why:
        pytest.skip(why)
    cluster = SlurmCluster(tmp_path_factory.mktemp("slurm"))
    try:
        try:
            cluster.start()
        except ClusterBusy as busy:
            pytest.skip(f"Slurm tests skipped: {busy}")
        print(f"\ntest Slurm cluster up in {cluster.started_in:.1f} s", file=sys.stderr)
        _running.append(cluster)
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
