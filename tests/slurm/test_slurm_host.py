"""The cluster behind the hosts interface, against the real test cluster: fits, dispatch to it
when this host cannot fit a job, and an approved kill that is `scancel` of the job id."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from slurmkit import NODE, NODE_MEMORY_MIB, SlurmCluster, wait_for

from ledger_rows import add_job
from swarmdeck.actions.hosts.base import JobSpec
from swarmdeck.actions.hosts.slurm import SlurmHost, cancel_cluster_job
from swarmdeck.cli import main
from swarmdeck.config import load_config
from swarmdeck.errors import UsageError
from swarmdeck.probes.machine import mem_total
from swarmdeck.probes.store_rows import Finding
from swarmdeck.state import StateStore
from swarmdeck.watchdog.kills import STOPPED, approve, request_kill

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


def test_a_gpu_job_never_fits_the_cluster_that_is_asked_for_no_gpu(slurm_config):
    """sbatch is given --mem and --cpus-per-task, never a GPU: a GPU job sent there would run
    without one."""
    host = SlurmHost(load_config(), StateStore.open_default())
    fit = host.fits(JobSpec(("train",), Path.cwd(), "train", booking=MIB, cap=MIB, gpu=True))
    assert (fit.now, fit.ever) == (False, False)
    assert fit.reason == "asks the cluster for no GPU: a GPU job goes to a host with a card"


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
            f'[memory]\nslice = "{tiny_local_slice}"\nreserve = "{mem_total() - 64 * MIB}B"\n'
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


def test_a_kill_request_for_a_cluster_job_is_approved_as_scancel_never_a_signal(
    slurm_config, slurm_cluster: SlurmCluster
):
    text = slurm_cluster.run("sbatch", "--parsable", "--mem=32M", "--output=/dev/null",
                             "--wrap", "sleep 300")
    slurm_job_id = int(text.strip().split(";")[0])
    wait_for(lambda: "RUNNING" in slurm_cluster.run("squeue", "-h", "-j", str(slurm_job_id),
                                                   "-o", "%T"), "the job running")
    store = StateStore.open_default()
    job_id = add_job(store, label="on the cluster", host=NODE, slurm_job_id=slurm_job_id,
                     runner_pid=None, runner_start_ticks=None, argv=["sleep", "300"])
    finding = Finding(
        id=1, key=f"output_stalled:job-{job_id}", rule="output_stalled", subject=f"job {job_id}",
        severity="warning", message="its output stopped growing", first_seen_at=time.time(),
        last_seen_at=time.time(), count=1, acknowledged_at=None, host=NODE, job_id=job_id,
    )

    request = request_kill(store, finding, "test", time.time())
    assert request.slurm_job_id == slurm_job_id and request.host == NODE
    outcome = approve(store, request.id, "test", time.time())

    assert outcome.result == STOPPED, outcome
    assert f"scancel {slurm_job_id}" in outcome.detail
    assert str(slurm_job_id) not in slurm_cluster.jobs_in_queue()
    store.close()


def test_a_finding_without_process_or_cluster_job_still_cannot_be_requested(slurm_config):
    store = StateStore.open_default()
    job_id = add_job(store, label="local, no pid", runner_pid=None, runner_start_ticks=None)
    finding = Finding(
        id=1, key="k", rule="output_stalled", subject="s", severity="warning", message="m",
        first_seen_at=0.0, last_seen_at=0.0, count=1, acknowledged_at=None, job_id=job_id,
    )
    with pytest.raises(UsageError):
        request_kill(store, finding, "test", time.time())
    store.close()
