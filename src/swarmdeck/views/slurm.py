"""A Slurm cluster as text: one compact line per node, and its jobs as rows of the Jobs table.

Shared by the Hosts and Jobs panels and `swarmdeck status`, so both say the same thing.
"""

from __future__ import annotations

from rich.text import Text

from swarmdeck.durations import NONE, runtime_text
from swarmdeck.probes.slurm import READ, ClusterJob, SlurmNode, SlurmReading
from swarmdeck.sizes import format_size
from swarmdeck.views.cells import Cell, size_cell

NODE_STYLES = {
    "idle": "green", "mixed": "cyan", "allocated": "yellow", "down": "bold red",
    "drained": "red", "draining": "red", "fail": "bold red", "failing": "red",
}
JOB_STYLES = {"running": "bold green", "pending": "yellow", "completing": "cyan"}


def node_line(node: SlurmNode, width: int = 12) -> Text:
    """`NAME  STATE  cores F/N free  mem F free of T  (reason)` for one node."""
    text = Text(f"{node.name:<{width}} ")
    text.append(f"{node.state:<9}", style=NODE_STYLES.get(node.state, ""))
    text.append(f" cores {node.cores_idle}/{node.cores} free")
    free = NONE if node.mem_free is None else format_size(node.mem_free)
    text.append(f"  mem {free} free of {format_size(node.mem_total)}")
    if node.reason:
        text.append(f"  ({node.reason})", style="dim")
    return text


def cluster_text(reading: SlurmReading) -> Text:
    """The cluster's card: a title with its totals, then its nodes by free memory."""
    text = Text(reading.label, style="bold")
    if reading.state != READ:
        why = f": {reading.reason}" if reading.reason else ""
        text.append(f"   {reading.state}{why}", style="not bold yellow")
        return text
    nodes = reading.nodes
    free = sum(n.mem_free or 0 for n in nodes if n.usable)
    total = sum(n.mem_total for n in nodes)
    running = sum(1 for job in reading.jobs if job.slurm_state == "RUNNING")
    pending = sum(1 for job in reading.jobs if job.slurm_state == "PENDING")
    text.append(
        f"   {len(nodes)} nodes, mem {format_size(free)} free of {format_size(total)}, "
        f"{running} running, {pending} pending",
        style="not bold",
    )
    width = max((len(n.name) for n in nodes), default=0)
    for node in nodes:
        text.append("\n  ")
        text.append_text(node_line(node, width))
    return text


def cluster_job_key(job: ClusterJob) -> str:
    return f"slurm-{job.slurm_job_id}"


def cluster_job_cells(job: ClusterJob, now: float) -> dict[str, Cell]:
    """A cluster job's cells under the Jobs table's columns; ours say which ledger row."""
    state = job.slurm_state.lower()
    label = job.name if not job.ours else f"{job.name} (job {job.ledger_id})"
    return {
        "id": f"slurm {job.slurm_job_id}",
        "label": label,
        "host": job.node or NONE,
        "state": Text(state + (f": {job.reason}" if job.reason and state == "pending" else ""),
                      style=JOB_STYLES.get(state, "")),
        "booked": size_cell(job.requested_memory),
        "current": NONE,
        "peak": NONE,
        "cap": size_cell(job.requested_memory),
        "cores": NONE if job.cpus is None else str(job.cpus),
        "owner": NONE,
        "via": "ours" if job.ours else job.user or NONE,
        "adj": NONE,
        "runtime": runtime_text(job.runtime(now)),
        "exit": NONE,
    }
