"""The cluster as text, as the Hosts card and `swarmdeck status` show it."""

from __future__ import annotations

from swarmdeck.probes.slurm import MIB, NOT_READ, READ, SlurmNode, SlurmReading, by_free_memory
from swarmdeck.views.slurm import cluster_text


def node(name: str, free_mib: int, state: str = "mixed", reason: str = "") -> SlurmNode:
    return SlurmNode(name, state, reason, 8, 2, 16384 * MIB, (16384 - free_mib) * MIB)


def test_one_line_per_node_most_free_memory_first_and_reasons_shown():
    nodes = by_free_memory([node("n1", 1024), node("n2", 8192),
                            node("n3", 16384, "drained", "bad disk")])
    text = cluster_text(SlurmReading("slurm", READ, nodes=nodes)).plain
    lines = text.splitlines()
    assert lines[0] == "slurm   3 nodes, mem 9G free of 48G, 0 running, 0 pending"
    assert [line.split()[0] for line in lines[1:]] == ["n2", "n1", "n3"]
    assert lines[3].endswith("(bad disk)")


def test_a_cluster_not_read_says_why_in_one_line():
    reading = SlurmReading("slurm", NOT_READ, "squeue did not answer within 2 s")
    assert cluster_text(reading).plain == "slurm   not read: squeue did not answer within 2 s"
