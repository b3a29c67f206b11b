"""The cluster behind the hosts interface, against the real test cluster: fits, dispatch to it
when this host cannot fit a job, and an approved kill that is `scancel` of the job id."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from slurmkit import NODE, NODE_MEMORY_MIB, SlurmCluster, wait_for

from swarmdeck.actions.hosts.base import JobSpec
from swarmdeck.actions.hosts.slurm import SlurmHost, cancel_cluster_job
from swarmdeck.cli import main
from swarmdeck.config import load_config
from swarmdeck.probes.machine import mem_total
from swarmdeck.state import StateStore

MIB = 1 << 20

pytestmark = pytest.mark.usefixtures("no_job_left")


def job(mib: int) -> JobSpec:
    return JobSpec(argv=("true",), cwd=Path.cwd(), label="t", booking=mib * MIB, cap=mib * MIB)


def test_fits_says_now_ever_or_never_from_the_nodes(slurm_config):
    host = SlurmHost(load_config(), StateStore.open_default())
    small = host.fits(job(100))
    assert (small.host, small.now, small.ever) == ("slurm", True, True)
    assert small.room == NODE_MEMORY_MIB * MIB
    huge = host.fits(job(NODE_MEMORY_MIB * 2))
    assert (huge.now, huge.ever) == (False, False)
    assert "largest usable node" in huge.reason


@pytest.fixture
def tiny_local_slice() -> Iterator[Path]:
    """A cgroup of this test's own as this host's slice, so the job can never fit here."""
    path = Path(f"/sys/fs/cgroup/memory/swarmdeck-test-{os.getpid()}-slurm-dispatch")
    path.mkdir()
    try:
        yield path
    finally:
        for child in path.iterdir():
            if child.is_dir():
                child.rmdir()
        path.rmdir()


def test_dispatch_goes_to_the_cluster_when_this_host_can_never_fit(
    slurm_config: Path, tiny_local_slice: Path, tmp_path: Path, monkeypatch, capfd
):
    slurm_config.write_text(
        slurm_config.read_text().replace(
            "[memory]\n",
            f'[memory]\nslice = "{tiny_local_slice}"\nreserve = "{mem_total() - 64 * MIB}"\n'
            'margin = "1M"\nadmission_wait = 0.0\n',
        )
    )
    monkeypatch.chdir(tmp_path)

    code = main(["dispatch", "--", "sh", "-c", "echo ran in $SLURM_JOB_ID"])

    out, err = capfd.readouterr()
    assert code == 0, err
    assert "dispatched to slurm" in err
    with StateStore.open_default().read() as conn:
        [row] = [dict(r) for r in conn.execute("SELECT * FROM jobs")]
    assert (row["host"], row["state"], row["exit_code"]) == (NODE, "done", 0)
    assert f"ran in {row['slurm_job_id']}" in out


def test_an_approved_kill_of_a_cluster_job_is_scancel_of_its_id(
    slurm_config, slurm_cluster: SlurmCluster
):
    text = slurm_cluster.run("sbatch", "--parsable", "--mem=32M", "--output=/dev/null",
                             "--wrap", "sleep 300")
    slurm_job_id = int(text.strip().split(";")[0])
    wait_for(lambda: "RUNNING" in slurm_cluster.run("squeue", "-h", "-j", str(slurm_job_id),
                                                   "-o", "%T"), "the job running")

    result = cancel_cluster_job(load_config(), StateStore.open_default(), slurm_job_id)

    assert result == f"scancel {slurm_job_id}: job ended cancelled"
    assert str(slurm_job_id) not in slurm_cluster.jobs_in_queue()
