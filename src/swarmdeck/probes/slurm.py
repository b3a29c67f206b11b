"""A Slurm cluster's nodes and jobs, read through its client commands only; nothing changes here.

swarmdeck runs no daemon of its own beside Slurm: `sinfo`, `squeue`, `scontrol` and `sacct` are
what every site has. Every call has a timeout, so a controller that does not answer makes the
cluster "not read (reason)" within seconds, never a frozen screen. The JSON of `sinfo --json`
and `squeue --json` changed across releases (22.05 gives plain numbers and strings; 23.02 and
later give `{"set", "infinite", "number"}` objects, lists of states and a grouped `sinfo`
array), so the readers below accept either; where `--json` is missing, `-o` text is read.
Accounting (`sacct -P`) is read as text: its field names have stayed the same across releases
while its JSON moved the step peaks between structures.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from swarmdeck.ledger import open_cluster_rows
from swarmdeck.sizes import MIB

if TYPE_CHECKING:
    from swarmdeck.config import SlurmConfig
    from swarmdeck.state import StateStore

KIND_NODE = "slurm-node"
KIND_CLUSTER = "slurm-cluster"
KIND_JOB = "slurm-job"
READ = "read"
NOT_READ = "not read"
ACTIVE_STATES = frozenset(
    {"PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED", "REQUEUED", "RESIZING",
     "SIGNALING", "STAGE_OUT", "STOPPED", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD"}
)
"""Job states in which the job is not over yet."""
_SIZE_SUFFIX = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40, "P": 1 << 50}


class SlurmUnavailable(Exception):
    """A client command failed or did not answer in time; the message says which and why."""


# ---- the client commands ----------------------------------------------------------------------


def client_env(config: SlurmConfig) -> dict[str, str]:
    """The environment of every client command: SLURM_CONF when the config names one."""
    env = dict(os.environ)
    if config.conf:
        env["SLURM_CONF"] = config.conf
    return env


def run_client(config: SlurmConfig, argv: Sequence[str], timeout: float | None = None) -> str:
    """A client command's stdout; SlurmUnavailable when it is missing, fails or times out."""
    limit = config.timeout if timeout is None else timeout
    if config.conf and not os.path.exists(config.conf):
        # The clients would retry a missing file for a minute before saying so.
        raise SlurmUnavailable(f"slurm.conf {config.conf} does not exist (slurm.conf in [slurm])")
    try:
        done = subprocess.run(
            list(argv), env=client_env(config), capture_output=True, text=True, timeout=limit,
            stdin=subprocess.DEVNULL,
        )
    except FileNotFoundError:
        raise SlurmUnavailable(f"{argv[0]} is not installed here") from None
    except subprocess.TimeoutExpired:
        raise SlurmUnavailable(f"{argv[0]} did not answer within {limit:g} s") from None
    if done.returncode != 0:
        lines = [line for line in done.stderr.strip().splitlines() if line.strip()]
        why = lines[-1].strip() if lines else f"exit {done.returncode}"
        raise SlurmUnavailable(f"{argv[0]}: {why}")
    return done.stdout


def _json(config: SlurmConfig, argv: Sequence[str]) -> dict[str, Any] | None:
    """The command's JSON, or None when this Slurm has no --json for it."""
    import json

    try:
        text = run_client(config, argv)
    except SlurmUnavailable as error:
        if "unrecognized option" in str(error) or "json" in str(error).lower():
            return None
        raise
    try:
        data = json.loads(text)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


# ---- tolerant readers of values that changed shape across releases -------------------------


def number(value: Any) -> int | None:
    """A count from 22.05's plain numbers or 23.02's `{"set", "infinite", "number"}` objects."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return int(value)
    if isinstance(value, Mapping):
        if not value.get("set", True) or value.get("infinite"):
            return None
        return number(value.get("number"))
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return None


def state_word(value: Any) -> str:
    """A state as one upper-case word: a string, a list of flags (the first is the base state),
    or sacct's `{"current": …}` object."""
    if isinstance(value, Mapping):
        value = value.get("current", "")
    if isinstance(value, list | tuple):
        value = value[0] if value else ""
    return str(value or "").split()[0].upper() if str(value or "").strip() else ""


def parse_size(text: str, unit: int = MIB) -> int | None:
    """A Slurm size ("191308K", "4G", "300M", "4096") in bytes; a bare number is in `unit`."""
    found = re.fullmatch(r"\s*([\d.]+)\s*([KMGTP]?)[nc]?\s*", text or "")
    if not found:
        return None
    amount, suffix = float(found.group(1)), found.group(2)
    return int(amount * (_SIZE_SUFFIX[suffix] if suffix else unit))


# ---- nodes --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SlurmNode:
    """One node of the partition as a host: cores and memory, allocated and in all."""

    name: str
    state: str
    """Slurm's base state, lower case: idle, mixed, allocated, down, drained, …"""
    reason: str
    cores: int
    cores_alloc: int
    mem_total: int
    mem_alloc: int | None
    """None where only text output was read and it does not say."""
    partitions: tuple[str, ...] = ()

    @property
    def cores_idle(self) -> int:
        return max(0, self.cores - self.cores_alloc)

    @property
    def mem_free(self) -> int | None:
        """Memory Slurm can still book on this node."""
        return None if self.mem_alloc is None else max(0, self.mem_total - self.mem_alloc)

    @property
    def usable(self) -> bool:
        """Whether the node takes new jobs (not down, drained or failing)."""
        return self.state not in {"down", "drained", "draining", "fail", "failing", "unknown"}

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out.update(
            kind=KIND_NODE, local=False, node_state=self.state, state=READ,
            cores_idle=self.cores_idle, mem_free=self.mem_free, partitions=list(self.partitions),
        )
        return out


def _node_state(value: Any) -> str:
    word = state_word(value).lower()
    return {"alloc": "allocated", "drain": "drained", "drng": "draining"}.get(word, word)


def _flat_node(item: Mapping[str, Any]) -> SlurmNode:
    """A node from 22.05's `sinfo --json` or any release's `scontrol show nodes --json`."""
    states = item.get("state")
    flags = [str(flag).lower() for flag in item.get("state_flags") or []]
    if isinstance(states, list):
        flags += [str(flag).lower() for flag in states[1:]]
    state = _node_state(states)
    if "drain" in flags:
        state = "draining" if state in {"mixed", "allocated"} else "drained"
    cpus = number(item.get("cpus")) or 0
    reason = item.get("reason") or ""
    if isinstance(reason, Mapping):
        reason = reason.get("description", "")
    return SlurmNode(
        name=str(item.get("name", "")),
        state=state,
        reason=str(reason),
        cores=cpus,
        cores_alloc=number(item.get("alloc_cpus")) or 0,
        mem_total=(number(item.get("real_memory")) or 0) * MIB,
        mem_alloc=(number(item.get("alloc_memory")) or 0) * MIB,
        partitions=tuple(item.get("partitions") or ()),
    )


def nodes_from_json(data: Mapping[str, Any]) -> list[SlurmNode]:
    """Nodes from `sinfo --json`: 22.05's flat `nodes`, or 23.02+'s grouped `sinfo` entries."""
    if isinstance(data.get("nodes"), list):
        return [_flat_node(item) for item in data["nodes"] if isinstance(item, Mapping)]
    nodes: dict[str, SlurmNode] = {}
    for entry in data.get("sinfo") or []:
        names = (entry.get("nodes") or {}).get("nodes") or []
        cpus = entry.get("cpus") or {}
        memory = entry.get("memory") or {}
        node = entry.get("node") or {}
        reason = entry.get("reason") or {}
        partition = (entry.get("partition") or {}).get("name")
        for name in names:
            # A group covers nodes in the same state; its figures are per node when it
            # holds one, so only single-node groups give exact allocations.
            share = max(1, len(names))
            nodes[name] = SlurmNode(
                name=name,
                state=_node_state(node.get("state")),
                reason=str(reason.get("description", "") if isinstance(reason, Mapping)
                           else reason),
                cores=(number(cpus.get("total")) or 0) // share,
                cores_alloc=(number(cpus.get("allocated")) or 0) // share,
                mem_total=(number(memory.get("maximum")) or 0) * MIB,
                mem_alloc=(number(memory.get("allocated")) or 0) * MIB // share,
                partitions=(partition,) if partition else (),
            )
    return list(nodes.values())


def nodes_from_text(text: str) -> list[SlurmNode]:
    """Nodes from `sinfo -N -h -o '%N|%T|%C|%m|%E|%P'` (CPUs as alloc/idle/other/total)."""
    nodes: dict[str, SlurmNode] = {}
    for line in text.splitlines():
        parts = line.split("|")
        if len(parts) < 6:
            continue
        name, state, cpus, memory, reason, partition = parts[:6]
        counts = [number(part) or 0 for part in cpus.split("/")]
        alloc, total = (counts[0], counts[-1]) if len(counts) == 4 else (0, 0)
        nodes[name] = SlurmNode(
            name=name,
            state=_node_state(state.rstrip("*~#!%$@^-")),
            reason="" if reason == "none" else reason,
            cores=total,
            cores_alloc=alloc,
            mem_total=(number(memory) or 0) * MIB,
            mem_alloc=None,
            partitions=(partition.rstrip("*"),),
        )
    return list(nodes.values())


def read_nodes(config: SlurmConfig) -> list[SlurmNode]:
    """The partition's nodes (all nodes when no partition is configured)."""
    where = ["-p", config.partition] if config.partition else []
    data = _json(config, ["sinfo", "--json", *where])
    if data is not None:
        nodes = nodes_from_json(data)
        if config.partition:
            nodes = [n for n in nodes if not n.partitions or config.partition in n.partitions]
        return nodes
    return nodes_from_text(run_client(config, ["sinfo", "-N", "-h", *where, "-o",
                                                "%N|%T|%C|%m|%E|%P"]))


# ---- jobs ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ClusterJob:
    """One job in the cluster's queue, ours or anyone's."""

    slurm_job_id: int
    name: str
    user: str
    partition: str
    slurm_state: str
    """Slurm's state word, upper case: PENDING, RUNNING, COMPLETING, …"""
    reason: str
    node: str
    """The node(s) it runs on; empty while pending."""
    requested_memory: int | None
    cpus: int | None
    started_at: float | None
    ours: bool = False
    ledger_id: int | None = None
    """Our ledger row's id when the job is ours."""
    output_path: str = ""
    """Where the job writes its stdout (the watchdog follows it); empty when not known."""

    def runtime(self, now: float | None = None) -> float | None:
        if self.started_at is None or self.slurm_state == "PENDING":
            return None
        return max(0.0, (now or time.time()) - self.started_at)

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out.update(
            kind=KIND_JOB, id=self.ledger_id, label=self.name, host=self.node,
            state=self.slurm_state.lower(), runtime=self.runtime(),
        )
        return out


def _job_memory(item: Mapping[str, Any]) -> int | None:
    per_node = number(item.get("memory_per_node"))
    if per_node:
        return per_node * MIB
    per_cpu = number(item.get("memory_per_cpu"))
    cpus = number(item.get("cpus")) or 1
    return per_cpu * cpus * MIB if per_cpu else None


def _reason(value: Any) -> str:
    text = str(value or "")
    return "" if text == "None" else text


def jobs_from_json(data: Mapping[str, Any], ours: Mapping[int, int]) -> list[ClusterJob]:
    """Jobs from `squeue --json` of any release; `ours` maps Slurm job ids to ledger ids."""
    jobs = []
    for item in data.get("jobs") or []:
        job_id = number(item.get("job_id"))
        state = state_word(item.get("job_state"))
        if job_id is None or state not in ACTIVE_STATES:
            # squeue --json also lists jobs that ended within MinJobAge; squeue's text does not.
            continue
        start = number(item.get("start_time"))
        jobs.append(
            ClusterJob(
                slurm_job_id=job_id,
                name=str(item.get("name", "")),
                user=str(item.get("user_name", "")),
                partition=str(item.get("partition", "")),
                slurm_state=state,
                reason=_reason(item.get("state_reason")),
                node=str(item.get("nodes", "") or "") if state != "PENDING" else "",
                requested_memory=_job_memory(item),
                cpus=number(item.get("cpus")),
                started_at=float(start) if start else None,
                ours=job_id in ours,
                ledger_id=ours.get(job_id),
                output_path=_output_path(item.get("standard_output"), job_id),
            )
        )
    return jobs


def _output_path(value: Any, job_id: int) -> str:
    """squeue's stdout path with its job-id patterns (%j, %A) filled in; other patterns (%x
    the name, %N the node, …) stay as written."""
    return str(value or "").replace("%j", str(job_id)).replace("%A", str(job_id))


def jobs_from_text(text: str, ours: Mapping[int, int]) -> list[ClusterJob]:
    """Jobs from `squeue -h -o '%i|%j|%u|%P|%T|%r|%N|%m|%C|%S'` (%S as ISO time)."""
    from datetime import datetime

    jobs = []
    for line in text.splitlines():
        parts = line.split("|")
        if len(parts) < 10 or not parts[0].isdigit():
            continue
        job_id = int(parts[0])
        try:
            started = datetime.fromisoformat(parts[9]).timestamp()
        except ValueError:
            started = None
        jobs.append(
            ClusterJob(
                slurm_job_id=job_id, name=parts[1], user=parts[2], partition=parts[3],
                slurm_state=parts[4].upper(), reason="" if parts[5] == "None" else parts[5],
                node=parts[6], requested_memory=parse_size(parts[7]), cpus=number(parts[8]),
                started_at=started, ours=job_id in ours, ledger_id=ours.get(job_id),
            )
        )
    return jobs


def read_jobs(config: SlurmConfig, ours: Mapping[int, int]) -> list[ClusterJob]:
    """The cluster's queued and running jobs (of the partition, when one is configured)."""
    where = ["-p", config.partition] if config.partition else []
    data = _json(config, ["squeue", "--json", *where])
    if data is not None:
        return jobs_from_json(data, ours)
    text = run_client(config, ["squeue", "-h", *where, "-o", "%i|%j|%u|%P|%T|%r|%N|%m|%C|%S"])
    return jobs_from_text(text, ours)


# ---- one job, while it runs and after -----------------------------------------------------------


@dataclass(frozen=True)
class JobStatus:
    """What the controller says about one job now."""

    slurm_job_id: int
    state: str
    """Upper-case state word; "" when the controller no longer knows the job."""
    reason: str = ""
    exit_code: str = ""
    """Slurm's "status:signal", like "0:0" or "1:0" or "0:9"."""
    node: str = ""

    @property
    def over(self) -> bool:
        return self.state not in ACTIVE_STATES


_FIELD = re.compile(r"(\w[\w/:]*)=(\S*)")


def status_from_scontrol(job_id: int, text: str) -> JobStatus:
    """A job's status from `scontrol show job -o ID` (text is the same in every release)."""
    fields = dict(_FIELD.findall(text))
    node = fields.get("BatchHost") or fields.get("NodeList") or ""
    return JobStatus(
        slurm_job_id=job_id,
        state=state_word(fields.get("JobState", "")),
        reason="" if fields.get("Reason") in (None, "None") else fields["Reason"],
        exit_code=fields.get("ExitCode", ""),
        node="" if node == "(null)" else node,
    )


def job_status(config: SlurmConfig, job_id: int) -> JobStatus:
    """The controller's view of one job; falls back to accounting once the controller let the
    job go (after MinJobAge)."""
    try:
        text = run_client(config, ["scontrol", "show", "job", "-o", str(job_id)])
    except SlurmUnavailable as error:
        if "Invalid job id" not in str(error):
            raise
        record = accounting(config, job_id)
        if record is None:
            return JobStatus(job_id, "")
        return JobStatus(job_id, record.state, "", record.exit_code, record.node)
    return status_from_scontrol(job_id, text)


@dataclass(frozen=True)
class Accounting:
    """What `sacct` recorded for a job: its end and the peak of its batch step."""

    slurm_job_id: int
    state: str
    exit_code: str
    node: str
    max_rss: int | None
    """MaxRSS of the `ID.batch` step in bytes; None until accounting has it."""
    elapsed: float | None
    batch_state: str = ""


def _elapsed(text: str) -> float | None:
    """Slurm's [D-]HH:MM:SS (or MM:SS) as seconds."""
    found = re.fullmatch(r"(?:(\d+)-)?(?:(\d+):)?(\d+):(\d+)(?:\.\d+)?", text.strip())
    if not found:
        return None
    days, hours, minutes, seconds = (int(part or 0) for part in found.groups())
    return float(((days * 24 + hours) * 60 + minutes) * 60 + seconds)


ACCOUNTING_FIELDS = "JobID,State,ExitCode,MaxRSS,Elapsed,NodeList"


def accounting_from_text(job_id: int, text: str) -> Accounting | None:
    """The job's record from `sacct -j ID -n -P --format=` ACCOUNTING_FIELDS."""
    rows = {}
    for line in text.splitlines():
        parts = line.split("|")
        if len(parts) >= 6:
            rows[parts[0]] = parts
    job = rows.get(str(job_id))
    if job is None:
        return None
    batch = rows.get(f"{job_id}.batch")
    rss = parse_size(batch[3], unit=1) if batch and batch[3] else None
    return Accounting(
        slurm_job_id=job_id,
        state=state_word(job[1]),
        exit_code=job[2],
        node="" if job[5] in ("None assigned", "") else job[5],
        max_rss=rss,
        elapsed=_elapsed(job[4]),
        batch_state=state_word(batch[1]) if batch else "",
    )


def accounting(config: SlurmConfig, job_id: int) -> Accounting | None:
    """The job's accounting record, or None when slurmdbd has none for it yet."""
    text = run_client(
        config, ["sacct", "-j", str(job_id), "-n", "-P", f"--format={ACCOUNTING_FIELDS}"]
    )
    return accounting_from_text(job_id, text)


# ---- the cluster as the snapshot shows it -------------------------------------------------------


@dataclass(frozen=True)
class SlurmReading:
    """One look at the cluster: its nodes and jobs, or why it could not be read."""

    label: str
    state: str
    reason: str = ""
    nodes: list[SlurmNode] = field(default_factory=list)
    jobs: list[ClusterJob] = field(default_factory=list)
    read_at: float | None = None

    def hosts_json(self) -> list[dict[str, Any]]:
        """Host objects for the snapshot: one per node, or one for the cluster not read."""
        if self.state == READ:
            return [node.to_json() for node in self.nodes]
        return [{
            "name": self.label, "kind": KIND_CLUSTER, "local": False, "state": self.state,
            "reason": self.reason, "read_at": self.read_at,
        }]

    def jobs_json(self) -> list[dict[str, Any]]:
        return [job.to_json() for job in self.jobs]


def our_cluster_jobs(store: StateStore) -> dict[int, int]:
    """Slurm job id → ledger id for every job we submitted that the ledger still has open."""
    with store.read() as conn:
        rows = open_cluster_rows(conn)
    return {int(row["slurm_job_id"]): int(row["id"]) for row in rows}


def cluster_label(config: SlurmConfig) -> str:
    return f"slurm:{config.partition}" if config.partition else "slurm"


def read_cluster(config: SlurmConfig, ours: Mapping[int, int]) -> SlurmReading:
    """The partition's nodes (as hosts) and the cluster's jobs, or "not read" with the reason."""
    label = cluster_label(config)
    try:
        nodes = read_nodes(config)
        jobs = read_jobs(config, ours)
    except SlurmUnavailable as error:
        return SlurmReading(label, NOT_READ, str(error), read_at=time.time())
    return SlurmReading(label, READ, nodes=by_free_memory(nodes), jobs=jobs, read_at=time.time())


def by_free_memory(nodes: Iterable[SlurmNode]) -> list[SlurmNode]:
    """Nodes with the most bookable memory first; a node that takes no jobs last."""
    return sorted(nodes, key=lambda n: (not n.usable, -(n.mem_free or 0), n.name))
