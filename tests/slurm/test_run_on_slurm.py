"""`swarmdeck run --on slurm` against a real single-node Slurm: booking, caps, peaks, interrupts."""

from __future__ import annotations

import io
import json
import os
import resource
import signal
import subprocess
import sys
import time

import pytest
from slurmkit import NODE, SlurmCluster, wait_for

from swarmdeck.actions.booking import HEADROOM, MIB, Via
from swarmdeck.actions.run_request import RunRequest
from swarmdeck.actions.slurm_run import run_on_slurm
from swarmdeck.config import load_config
from swarmdeck.exitcodes import ExitCode
from swarmdeck.state import StateStore

HOLD = (
    "import resource, sys, time\n"
    "block = bytearray(int(sys.argv[1]) << 20)\n"
    "for i in range(0, len(block), 4096): block[i] = 1\n"
    "time.sleep(float(sys.argv[2]))\n"
    "print('held', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, flush=True)\n"
)
"""A job that holds N MiB for S seconds and prints the peak it really held (ru_maxrss)."""

pytestmark = pytest.mark.usefixtures("no_job_left")


def hold(mib: int, seconds: float) -> list[str]:
    return [sys.executable, "-c", HOLD, str(mib), str(seconds)]


def submit(request: RunRequest) -> tuple[int, bytes, list[str]]:
    notes: list[str] = []
    sink = io.BytesIO()
    code = run_on_slurm(load_config(), StateStore.open_default(), request, notes.append,
                        sink.write)
    return code, sink.getvalue(), notes


def rows() -> list[dict]:
    with StateStore.open_default().read() as conn:
        return [dict(row) for row in conn.execute("SELECT * FROM jobs ORDER BY id")]


def slurm_mem_of(cluster: SlurmCluster, slurm_job_id: int) -> str:
    text = cluster.run("scontrol", "show", "job", "-o", str(slurm_job_id))
    return next(part for part in text.split() if part.startswith("MinMemoryNode="))


def test_job_runs_with_mem_from_its_learned_peak(slurm_config, slurm_cluster, tmp_path):
    argv = hold(60, 2.5)
    first, output, _ = submit(RunRequest(argv=argv, cap="400M", cwd=tmp_path))
    assert first == 0, output
    learned = rows()[-1]["peak"]
    assert learned and learned > 60 * MIB

    code, output, notes = submit(RunRequest(argv=argv, cwd=tmp_path))

    assert code == 0, (output, notes)
    assert b"held" in output
    second = rows()[-1]
    booked = -(-int(learned * HEADROOM) // MIB) * MIB
    assert second["admitted_via"] == Via.HISTORY.value
    assert second["booked"] == booked
    assert second["cap"] == -(-int(booked * 1.5) // MIB) * MIB
    assert slurm_mem_of(slurm_cluster, second["slurm_job_id"]) == (
        f"MinMemoryNode={second['cap'] // MIB}M"
    )
    assert second["host"] == NODE
    assert second["state"] == "done"


def test_job_over_its_cap_exits_250_and_the_next_booking_is_its_cap(slurm_config, tmp_path):
    argv = hold(300, 3)
    code, _, notes = submit(RunRequest(argv=argv, cap="100M", cwd=tmp_path))

    assert code == ExitCode.OWN_CAP, notes
    ended = rows()[-1]
    assert ended["outcome"] == "own cap"
    assert ended["hit_ceiling"] == 1
    assert any("hit its own memory cap" in line for line in notes)

    # The next run, past its cap this time, books the cap it hit.
    code, _, _ = submit(RunRequest(argv=argv, cwd=tmp_path))
    again = rows()[-1]
    assert code == ExitCode.OWN_CAP
    assert again["booked"] == 100 * MIB
    assert again["admitted_via"] == Via.CEILING.value


def test_peak_read_back_from_sacct_is_what_the_job_really_held(slurm_config, tmp_path):
    code, output, notes = submit(RunRequest(argv=hold(200, 3), cap="600M", cwd=tmp_path))

    assert code == 0, (output, notes)
    held = int(output.split(b"held")[-1].split()[0])
    peak = rows()[-1]["peak"]
    assert peak is not None
    assert abs(peak - held) <= held * 0.10, (peak, held)


def test_a_failing_command_exits_with_its_own_status(slurm_config, tmp_path):
    code, _, _ = submit(RunRequest(argv=["sh", "-c", "echo out; exit 7"], cap="64M", cwd=tmp_path))
    assert code == 7
    assert rows()[-1]["outcome"] == "exit 7"
    assert rows()[-1]["declared_cap"] == "64M"


def test_interrupt_cancels_the_job_and_leaves_nothing_in_squeue(slurm_config, slurm_cluster,
                                                                 tmp_path):
    runner = subprocess.Popen(
        [sys.executable, "-m", "swarmdeck.cli", "run", "--on", "slurm", "--cap", "64M", "--",
         "sleep", "300"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    try:
        wait_for(lambda: any(r["state"] == "running" for r in rows()), "the job running", 60)
        slurm_job_id = rows()[-1]["slurm_job_id"]
        assert str(slurm_job_id) in slurm_cluster.jobs_in_queue()

        runner.send_signal(signal.SIGINT)
        code = runner.wait(timeout=60)
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.wait()

    assert code == 128 + signal.SIGINT, runner.stderr.read() if runner.stderr else ""
    assert str(slurm_job_id) not in slurm_cluster.jobs_in_queue()
    state = slurm_cluster.run("scontrol", "show", "job", "-o", str(slurm_job_id))
    assert "JobState=CANCELLED" in state
    ended = rows()[-1]
    assert ended["state"] == "done"
    assert ended["outcome"] == "cancelled: runner got SIGINT"


def test_status_json_has_the_nodes_as_hosts_and_the_cluster_jobs(slurm_config, slurm_cluster,
                                                                 tmp_path):
    foreign = slurm_cluster.run("sbatch", "--parsable", "--mem=50M", "--output=/dev/null",
                                "--wrap", "sleep 120")
    foreign_id = int(foreign.strip().split(";")[0])
    try:
        wait_for(lambda: str(foreign_id) in slurm_cluster.jobs_in_queue(), "the job queued")
        done = subprocess.run(
            [sys.executable, "-m", "swarmdeck.cli", "status", "--json"],
            capture_output=True, text=True, timeout=60, cwd=tmp_path,
        )
    finally:
        slurm_cluster.run("scancel", str(foreign_id))
    assert done.returncode == 0, done.stderr
    snapshot = json.loads(done.stdout)
    nodes = [host for host in snapshot["hosts"] if host.get("kind") == "slurm-node"]
    assert [node["name"] for node in nodes] == [NODE]
    node = nodes[0]
    assert node["mem_total"] == 4096 * MIB
    assert node["cores"] == 2
    assert node["node_state"] in {"idle", "mixed"}
    jobs = {job["slurm_job_id"]: job for job in snapshot["jobs"] if job.get("kind") == "slurm-job"}
    assert jobs[foreign_id]["requested_memory"] == 50 * MIB
    assert jobs[foreign_id]["ours"] is False
    assert jobs[foreign_id]["output_path"] == "/dev/null"
    assert jobs[foreign_id]["state"] in {"pending", "running"}
    assert set(snapshot) >= {"taken_at", "hosts", "jobs", "kill_requests"}


def test_a_stopped_controller_reads_as_not_read_quickly(slurm_config, slurm_cluster, tmp_path):
    slurm_config.write_text(slurm_config.read_text().replace("timeout = 5", "timeout = 2"))
    slurm_cluster.stop_controller()
    try:
        began = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-m", "swarmdeck.cli", "status", "--json"],
            capture_output=True, text=True, timeout=60, cwd=tmp_path,
        )
        status_took = time.monotonic() - began
        began = time.monotonic()
        run = subprocess.run(
            [sys.executable, "-m", "swarmdeck.cli", "run", "--on", "slurm", "--", "true"],
            capture_output=True, text=True, timeout=60, cwd=tmp_path,
        )
        run_took = time.monotonic() - began
    finally:
        slurm_cluster.start_controller()
    assert done.returncode == 0, done.stderr
    cluster = [h for h in json.loads(done.stdout)["hosts"] if h.get("kind") == "slurm-cluster"]
    assert cluster[0]["state"] == "not read"
    assert cluster[0]["reason"]
    # Each client call is bounded by the 2 s timeout; two calls at most, plus start-up.
    assert status_took < 15, status_took
    assert run.returncode == ExitCode.REFUSED, run.stderr
    assert "not read" in run.stderr
    assert run_took < 15, run_took


def test_a_job_past_its_timeout_is_cancelled_and_exits_253(slurm_config, slurm_cluster, tmp_path):
    code, _, notes = submit(RunRequest(argv=["sleep", "60"], cap="32M", timeout=1, cwd=tmp_path))

    assert code == ExitCode.TIMED_OUT, notes
    assert rows()[-1]["outcome"] == "timed out"
    assert str(rows()[-1]["slurm_job_id"]) not in slurm_cluster.jobs_in_queue()


def test_a_job_whose_node_fails_exits_254(slurm_config, slurm_cluster, tmp_path):
    runner = subprocess.Popen(
        [sys.executable, "-m", "swarmdeck.cli", "run", "--on", "slurm", "--cap", "32M", "--",
         "sleep", "300"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    try:
        wait_for(lambda: any(r["state"] == "running" for r in rows()), "the job running", 60)
        slurm_cluster.run("scontrol", "update", f"nodename={NODE}", "state=down",
                          "reason=test node failure")
        code = runner.wait(timeout=60)
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.wait()
        # The node may be back already (ReturnToService=2): resuming it is then refused.
        slurm_cluster.run("scontrol", "update", f"nodename={NODE}", "state=resume", check=False)
        slurm_cluster.wait_node_idle()

    assert code == ExitCode.SLICE_FULL, runner.stderr.read() if runner.stderr else ""
    assert rows()[-1]["outcome"] == "node_fail: not its fault"


def test_a_row_whose_runner_died_is_closed_as_lost_naming_the_scancel(slurm_config, slurm_cluster,
                                                                     tmp_path):
    runner = subprocess.Popen(
        [sys.executable, "-m", "swarmdeck.cli", "run", "--on", "slurm", "--cap", "32M", "--",
         "sleep", "300"],
        cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        wait_for(lambda: any(r["state"] == "running" for r in rows()), "the job running", 60)
    finally:
        runner.kill()
        runner.wait()
    slurm_job_id = rows()[-1]["slurm_job_id"]
    try:
        done = subprocess.run(
            [sys.executable, "-m", "swarmdeck.cli", "status", "--json"],
            capture_output=True, text=True, timeout=60, cwd=tmp_path,
        )
        assert done.returncode == 0, done.stderr
        row = rows()[-1]
        assert (row["state"], row["exit_code"]) == ("lost", 255)
        assert f"scancel {slurm_job_id}" in row["outcome"]
        # Still the cluster's job: shown in Jobs, no longer marked as one we follow.
        jobs = [j for j in json.loads(done.stdout)["jobs"] if j.get("kind") == "slurm-job"]
        assert [(j["slurm_job_id"], j["ours"]) for j in jobs] == [(slurm_job_id, False)]
    finally:
        slurm_cluster.run("scancel", str(slurm_job_id))


def test_a_runner_with_over_a_thousand_files_open_still_follows_its_job(slurm_config, tmp_path):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 4096)), hard))
    held = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]
    try:
        code, output, notes = submit(RunRequest(argv=["echo", "followed"], cap="32M",
                                                cwd=tmp_path))
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert code == 0, notes
    assert b"followed" in output
