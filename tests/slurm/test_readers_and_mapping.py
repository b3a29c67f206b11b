"""The pure parts of the Slurm backend: readers of every release's output, exit codes, fits."""

from __future__ import annotations

import signal

import pytest

from swarmdeck.actions.hosts.slurm import ending_of, exit_for, fit_of, mem_argument
from swarmdeck.exitcodes import ExitCode
from swarmdeck.probes.slurm import (
    MIB,
    Accounting,
    JobStatus,
    SlurmNode,
    accounting_from_text,
    by_free_memory,
    jobs_from_json,
    jobs_from_text,
    nodes_from_json,
    nodes_from_text,
    number,
    parse_size,
    status_from_scontrol,
)

NODE_22_05 = {
    "name": "n1", "state": "mixed", "state_flags": [], "cpus": 8, "alloc_cpus": 3,
    "real_memory": 16000, "alloc_memory": 4000, "reason": "", "partitions": ["batch"],
}
NODE_23_02 = {
    "name": "n2", "state": ["IDLE", "DRAIN"], "cpus": 16, "alloc_cpus": 0,
    "real_memory": 64000, "alloc_memory": 0, "reason": "disk check", "partitions": ["batch"],
}
JOB_22_05 = {
    "job_id": 11, "name": "build", "user_name": "ann", "partition": "batch",
    "job_state": "RUNNING", "state_reason": "None", "nodes": "n1", "memory_per_node": 2048,
    "memory_per_cpu": None, "cpus": 4, "start_time": 1000,
    "standard_output": "/shared/out/slurm-%j.out",
}
JOB_23_02 = {
    "job_id": 12, "name": "test", "user_name": "bob", "partition": "batch",
    "job_state": ["PENDING"], "state_reason": "Resources", "nodes": "",
    "memory_per_node": {"set": False, "infinite": False, "number": 0},
    "memory_per_cpu": {"set": True, "infinite": False, "number": 512},
    "cpus": {"set": True, "infinite": False, "number": 2},
    "start_time": {"set": True, "infinite": False, "number": 0},
}


def test_counts_read_from_plain_numbers_and_number_objects():
    assert number(5) == 5
    assert number({"set": True, "infinite": False, "number": 7}) == 7
    assert number({"set": False, "number": 7}) is None
    assert number({"set": True, "infinite": True, "number": 0}) is None
    assert number(None) is None


def test_nodes_read_from_22_05_and_23_02_json():
    mixed, drained = nodes_from_json({"nodes": [NODE_22_05, NODE_23_02]})
    assert (mixed.state, mixed.cores_idle, mixed.mem_free) == ("mixed", 5, 12000 * MIB)
    assert (drained.state, drained.reason, drained.usable) == ("drained", "disk check", False)


def test_nodes_read_from_grouped_sinfo_json():
    data = {"sinfo": [{
        "nodes": {"nodes": ["n3"]}, "node": {"state": ["ALLOCATED"]},
        "cpus": {"allocated": 4, "idle": 0, "total": 4},
        "memory": {"maximum": 8000, "allocated": 8000}, "reason": {"description": ""},
        "partition": {"name": "batch"},
    }]}
    (node,) = nodes_from_json(data)
    assert (node.name, node.state, node.cores_idle, node.mem_free) == ("n3", "allocated", 0, 0)


def test_nodes_read_from_sinfo_text_when_there_is_no_json():
    (node,) = nodes_from_text("n4|down*|0/0/8/8|32000|not responding|batch*\n")
    assert (node.state, node.cores, node.reason, node.usable) == (
        "down", 8, "not responding", False
    )


def test_jobs_read_from_both_releases_ours_marked_and_ended_ones_left_out():
    ended = {**JOB_22_05, "job_id": 13, "job_state": "COMPLETED"}
    running, pending = jobs_from_json({"jobs": [JOB_22_05, JOB_23_02, ended]}, {12: 40})
    assert (running.node, running.requested_memory, running.ours) == ("n1", 2048 * MIB, False)
    assert running.runtime(now=1010) == 10
    assert running.output_path == "/shared/out/slurm-11.out"
    assert (pending.slurm_state, pending.reason, pending.node) == ("PENDING", "Resources", "")
    assert pending.requested_memory == 512 * 2 * MIB
    assert (pending.ours, pending.ledger_id, pending.runtime()) == (True, 40, None)


def test_jobs_read_from_squeue_text():
    (job,) = jobs_from_text("21|x|ann|batch|RUNNING|None|n1|1G|2|2026-01-01T00:00:00\n", {})
    assert (job.slurm_job_id, job.requested_memory, job.reason) == (21, 1 << 30, "")


def test_status_and_accounting_read_from_text():
    status = status_from_scontrol(5, "JobId=5 JobName=x JobState=OUT_OF_MEMORY Reason=OutOfMemory"
                                     " ExitCode=0:125 NodeList=n1 BatchHost=n1")
    assert (status.state, status.over, status.node) == ("OUT_OF_MEMORY", True, "n1")
    record = accounting_from_text(
        5, "5|CANCELLED by 0|0:15||00:01:02|n1\n5.batch|CANCELLED|0:15|191308K|00:01:02|n1\n"
    )
    assert record is not None
    assert (record.state, record.max_rss, record.elapsed) == ("CANCELLED", 191308 * 1024, 62.0)
    assert parse_size("4096") == 4096 * MIB
    assert parse_size("300Mn") == 300 * MIB


@pytest.mark.parametrize(
    ("state", "exit_code", "expected"),
    [
        ("COMPLETED", "0:0", 0),
        ("FAILED", "7:0", 7),
        ("OUT_OF_MEMORY", "0:125", ExitCode.OWN_CAP),
        ("TIMEOUT", "0:0", ExitCode.TIMED_OUT),
        ("NODE_FAIL", "0:0", ExitCode.SLICE_FULL),
        ("PREEMPTED", "0:0", ExitCode.SLICE_FULL),
        ("FAILED", "0:9", 128 + signal.SIGKILL),
        ("CANCELLED", "0:0", 128 + signal.SIGTERM),
    ],
)
def test_engine_endings_map_onto_our_exit_codes(state, exit_code, expected):
    assert exit_for(state, exit_code)[0] == expected


def test_mem_argument_never_gives_less_than_the_cap():
    assert mem_argument(100 * MIB) == "--mem=100M"
    assert mem_argument(100 * MIB + 1) == "--mem=101M"


def node(name: str, free_mib: int, state: str = "idle", total_mib: int = 8000) -> SlurmNode:
    return SlurmNode(name, state, "", 4, 0, total_mib * MIB, (total_mib - free_mib) * MIB)


def test_fit_now_ever_or_never_and_nodes_by_free_memory():
    nodes = [node("a", 1000), node("b", 6000), node("c", 8000, state="down", total_mib=64000)]
    now = fit_of("slurm", nodes, 2000 * MIB, 1)
    assert (now.now, now.room, now.reason) == (True, 6000 * MIB, "")
    later = fit_of("slurm", nodes, 7000 * MIB, 1)
    assert (later.now, later.ever) == (False, True)
    never = fit_of("slurm", nodes, 9000 * MIB, 1)
    assert not never.ever
    assert "largest usable node" in never.reason
    assert [n.name for n in by_free_memory(nodes)] == ["b", "a", "c"]


def test_the_controllers_ending_wins_over_accounting_that_lags_but_oom_from_either_wins():
    lagging = Accounting(5, "COMPLETED", "0:0", "n1", 1 << 20, 1.0, "COMPLETED")
    assert ending_of(JobStatus(5, "OUT_OF_MEMORY", "", "0:125"), lagging) == (
        "OUT_OF_MEMORY", "0:125"
    )
    oom = Accounting(5, "OUT_OF_MEMORY", "0:125", "n1", None, 1.0, "OUT_OF_MEMORY")
    assert ending_of(JobStatus(5, "COMPLETED", "", "0:0"), oom) == ("OUT_OF_MEMORY", "0:125")
    assert ending_of(JobStatus(5, ""), lagging) == ("COMPLETED", "0:0")
