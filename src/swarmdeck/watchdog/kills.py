"""Kill requests: a finding's subject process, stopped only once a person (or the escalation
policy) approves, and only if it is still the process the finding named.

Approval runs the tree stop of actions/kill.py against the supervised set (running caged jobs
and the processes of live Claude Code sessions), and records what happened: stopped, already
gone, or refused (not supervised; the pid now names another process; another host's process).
Every decision also raises an alert, so the Alerts panel says what was done; a decision of the
escalation policy is said by the one critical alert the escalation raises (watchdog/loop.py).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from swarmdeck import paths
from swarmdeck.actions.alerts import raise_alert
from swarmdeck.actions.kill import (
    NotSupervisedError,
    OwnTreeError,
    process_table,
    stop_tree,
    tree_of,
)
from swarmdeck.breaks import broken
from swarmdeck.errors import RefusedError, UsageError
from swarmdeck.ledger import job_row, open_cluster_row, running_processes
from swarmdeck.ledger.schema import ACTIVE, RUNNING
from swarmdeck.probes import procs
from swarmdeck.probes.cgroups import cgroup_pids
from swarmdeck.probes.claude.live_sessions import claude_code_processes
from swarmdeck.probes.machine import local_host_name
from swarmdeck.probes.procs import ProcessIdentity, StatLine, read_stat
from swarmdeck.probes.store_rows import Finding, KillRequest
from swarmdeck.words import counted

if TYPE_CHECKING:
    from sqlite3 import Row

    from swarmdeck.state import StateStore

PENDING = "pending"
APPROVED = "approved"
DENIED = "denied"
STOPPED = "stopped"
ALREADY_GONE = "already gone"
NOT_SUPERVISED = "refused: not supervised"
PID_REUSED = "refused: pid reused"
OTHER_HOST = "refused: another host"
OWN_TREE = "refused: it holds the approver"
"""Approved from inside the tree it stops (an agent approving its own session's kill)."""
NOT_STOPPED = "not stopped"
ESCALATION = "escalation"
"""Who decides when the escalation policy acts."""
_COLUMNS = ", ".join(KillRequest.__dataclass_fields__)


@dataclass(frozen=True)
class TreeMember:
    """One process a stop would signal, for the approve modal."""

    pid: int
    comm: str
    command: str


@dataclass(frozen=True)
class KillOutcome:
    """What deciding a request did."""

    request: KillRequest
    result: str
    """stopped, already gone, or refused: …; `denied` for a denial."""
    detail: str

    @property
    def said(self) -> str:
        """The result and its detail in one line, the result said once: "stopped pid 7 and 1
        more process" (the detail starts with it), "refused: pid reused: pid 7 now names…"."""
        return self.detail if self.detail.startswith(self.result) else (
            f"{self.result}: {self.detail}"
        )


def command_line(pid: int) -> str:
    """A process's command line as one string (its name in brackets when it has none)."""
    text = procs.command_line(pid)
    if text:
        return text
    stat = read_stat(pid)
    return f"[{stat.comm}]" if stat else ""


def request_command(finding: Finding) -> str | None:
    """The command line that asks for the finding's process to be stopped, when it names one
    (a pid and its start ticks); None for a finding with no process to stop."""
    if finding.pid is None or finding.start_ticks is None:
        return None
    return f"swarmdeck kills --request {finding.id}"


def process_user(pid: int) -> str | None:
    """The name of the user a process runs as (its uid when unnamed); None when gone."""
    user = procs.user_of(pid)
    return None if user == "?" else user


def request_kill(store: StateStore, finding: Finding, requested_by: str, now: float) -> KillRequest:
    """A pending kill request for the finding's subject process (the same one if one is pending).

    A finding about a job on the Slurm cluster asks for that job (its id) instead: approval
    is then `scancel`. Raises UsageError when the finding names neither, and RefusedError when
    its job has already ended, or the process it names has (a request then could only be
    recorded for nothing)."""
    _refuse_ended_job(store, finding)
    cluster_job = _cluster_job(store, finding.job_id)
    if cluster_job is None and (finding.pid is None or finding.start_ticks is None):
        raise UsageError(
            f"finding {finding.id} ({finding.rule}) names no process to stop; act on it by hand"
        )
    if cluster_job is not None:
        return _request_cluster_kill(store, finding, requested_by, now, cluster_job)
    _refuse_ended_process(store, finding)
    with store.transaction() as conn:
        row = conn.execute(
            f"SELECT {_COLUMNS} FROM kill_requests WHERE finding_key = ? AND state = ?",
            (finding.key, PENDING),
        ).fetchone()
        if row is not None:
            return KillRequest(**dict(row))
        cursor = conn.execute(
            "INSERT INTO kill_requests (job_id, host, pid, start_ticks, user, command, reason,"
            " finding_key, state, requested_at, requested_by)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                finding.job_id, finding.host or local_host_name(), finding.pid,
                finding.start_ticks, process_user(finding.pid),
                command_line(finding.pid)[:500] or finding.subject,
                f"{finding.rule}: {finding.message}", finding.key, PENDING, now, requested_by,
            ),
        )
        row = conn.execute(
            f"SELECT {_COLUMNS} FROM kill_requests WHERE id = ?", (cursor.lastrowid,)
        ).fetchone()
    return KillRequest(**dict(row))


def _refuse_ended_job(store: StateStore, finding: Finding) -> None:
    """Raise RefusedError when the finding is about a ledger job that is no longer active."""
    if finding.job_id is None:
        return
    with store.read() as conn:
        row = job_row(conn, finding.job_id)
    if row is not None and row["state"] not in ACTIVE:
        raise RefusedError(f"job {finding.job_id} has ended: nothing to stop")


def has_ended(stat: StatLine | None) -> bool:
    """Whether the process a /proc stat was read for has ended: no process holds its pid, or
    only its zombie does. Approval says such a process is already gone; a request for it is
    refused (`_refuse_ended_process`)."""
    return stat is None or stat.state == "Z"


def _refuse_ended_process(store: StateStore, finding: Finding) -> None:
    """Raise RefusedError when the finding's process has ended and left its pid free, or only
    its zombie there (`has_ended`): then no process holds the recorded pid and start ticks,
    whatever its job's row still says.

    A pid that now names another live process (other start ticks) is not refused here: the
    request records the identity it was made for, and approval compares that before any signal
    (PID_REUSED), as it must for a pid taken over between the request and the decision."""
    assert finding.pid is not None and finding.start_ticks is not None
    if not has_ended(read_stat(finding.pid)):
        # A live process holds the pid: the recorded one (same start ticks), or one that took
        # its pid over, which approval refuses on the start ticks the request records.
        return
    state = None
    if finding.job_id is not None:
        with store.read() as conn:
            row = job_row(conn, finding.job_id)
        state = row["state"] if row is not None else None
    if state is not None:
        raise RefusedError(
            f"job {finding.job_id}'s process (pid {finding.pid}) has already ended, though its"
            f" row still says {state}: nothing to stop"
        )
    raise RefusedError(
        f"finding {finding.id}'s process (pid {finding.pid}) has already ended: nothing to stop"
    )


def _cluster_job(store: StateStore, job_id: int | None) -> tuple[int, str, str] | None:
    """(Slurm job id, node, command) of an active ledger job on the cluster, else None."""
    if job_id is None:
        return None
    with store.read() as conn:
        row = open_cluster_row(conn, job_id)
    if row is None:
        return None
    return int(row["slurm_job_id"]), row["host"], " ".join(json.loads(row["argv"]))


def _request_cluster_kill(
    store: StateStore, finding: Finding, requested_by: str, now: float,
    cluster_job: tuple[int, str, str],
) -> KillRequest:
    slurm_job_id, node, command = cluster_job
    with store.transaction() as conn:
        row = conn.execute(
            f"SELECT {_COLUMNS} FROM kill_requests WHERE finding_key = ? AND state = ?",
            (finding.key, PENDING),
        ).fetchone()
        if row is None:
            cursor = conn.execute(
                "INSERT INTO kill_requests (job_id, host, pid, start_ticks, user, command, reason,"
                " finding_key, state, requested_at, requested_by, slurm_job_id)"
                " VALUES (?, ?, 0, 0, NULL, ?, ?, ?, ?, ?, ?, ?)",
                (
                    finding.job_id, node, command[:500] or finding.subject,
                    f"{finding.rule}: {finding.message}", finding.key, PENDING, now,
                    requested_by, slurm_job_id,
                ),
            )
            row = conn.execute(
                f"SELECT {_COLUMNS} FROM kill_requests WHERE id = ?", (cursor.lastrowid,)
            ).fetchone()
    return KillRequest(**dict(row))


def kill_request(store: StateStore, request_id: int) -> KillRequest | None:
    with store.read() as conn:
        row = conn.execute(
            f"SELECT {_COLUMNS} FROM kill_requests WHERE id = ?", (request_id,)
        ).fetchone()
    return KillRequest(**dict(row)) if row else None


def recent_kill_requests(store: StateStore, limit: int = 50) -> list[tuple[KillRequest, str]]:
    """Kill requests, pending first then newest, each with its result ('' while pending)."""
    with store.read() as conn:
        rows = conn.execute(
            f"SELECT {_COLUMNS}, coalesce(result, '') AS result FROM kill_requests"
            " ORDER BY state != 'pending', id DESC LIMIT ?",
            (limit,),
        ).fetchall()
    out = []
    for row in rows:
        data = dict(row)
        result = data.pop("result")
        out.append((KillRequest(**data), result))
    return out


def supervised_set(store: StateStore, claude_dir: Path | None = None) -> set[ProcessIdentity]:
    """Running caged jobs' root processes, and the processes of live Claude Code sessions, each
    proven to be the Claude Code process its pid file names (`claude_code_processes`).

    A row is not proof: any same-user process can write one naming itself as the live runner
    and any process as the job. A row's process counts only while the row's runner still runs
    (a row of a dead runner is lost, whatever it says) and the process is a member of the cage
    that runner made for that row (`job_cage`): a cgroup only root, or the slice's delegated
    owner, can make there and fill."""
    from swarmdeck.actions.reconcile import runner_alive

    with store.read() as conn:
        rows = running_processes(conn)
    out = set()
    slice_path = _slice_path() if rows else None
    for row in rows:
        cage = job_cage(row, slice_path)
        if cage is not None and runner_alive(row) and row["pid"] in cgroup_pids(cage):
            out.add(ProcessIdentity(row["pid"], row["start_ticks"]))
    return out | claude_code_processes(claude_dir or Path(paths.claude_dir()))


def _slice_path() -> str | None:
    """The configured slice, where every cage of this host's rows lies."""
    from swarmdeck.actions.reconcile import configured_slice
    from swarmdeck.config import load_config

    return configured_slice(load_config().memory.slice)


def job_cage(row: Row, slice_path: str | None) -> Path | None:
    """The row's cgroup when it is the cage its runner made (right inside `slice_path`, named
    for that job and that runner: cage.base.made_cage); None for any other cgroup, or none."""
    from swarmdeck.actions.cage.base import made_cage

    if slice_path is None or not row["cgroup"] or row["runner_pid"] is None:
        return None
    if not made_cage(row["cgroup"], slice_path, row["id"], row["runner_pid"]):
        return None
    return Path(row["cgroup"])


def stop_preview(store: StateStore, request: KillRequest) -> list[TreeMember]:
    """The processes approving would stop, as they are now: the subject and its descendants,
    and the other members of its job's cage with theirs. A cluster job's processes run on its
    node, out of sight: none are listed (approving it is `scancel`)."""
    if request.slurm_job_id is not None:
        return []
    table = process_table()
    roots = [ProcessIdentity(request.pid, request.start_ticks)]
    members = _cage_members(store, request)
    for pid in members() if members else ():
        stat = table.get(pid)
        if stat is not None:
            roots.append(ProcessIdentity(pid, stat.start_ticks))
    return [
        TreeMember(ident.pid, table[ident.pid].comm, command_line(ident.pid)[:200])
        for ident in tree_of(roots, table)
    ]


def approve(
    store: StateStore,
    request_id: int,
    decided_by: str,
    now: float,
    grace: float = 5.0,
    claude_dir: Path | None = None,
) -> KillOutcome:
    """Stop the request's process tree if it is still that process and a supervised one; one
    asked from inside that tree (OWN_TREE) signals nothing and leaves the request pending."""
    request = _pending(store, request_id)
    if request.slurm_job_id is not None:
        return _approve_cluster_job(store, request, decided_by, now)
    target = ProcessIdentity(request.pid, request.start_ticks)
    stat = read_stat(request.pid)
    if stat is not None and broken("no-pid-start-check"):
        target = ProcessIdentity(request.pid, stat.start_ticks)
    if request.host != local_host_name():
        result, detail = OTHER_HOST, f"pid {request.pid} runs on {request.host}, not here"
    elif has_ended(stat):
        result, detail = ALREADY_GONE, f"pid {request.pid} had already ended"
    elif stat.start_ticks != target.start_ticks:
        result, detail = PID_REUSED, (
            f"pid {request.pid} now names another process ({stat.comm}); not signalled"
        )
    else:
        try:
            report = stop_tree(
                target, supervised_set(store, claude_dir), grace, _cage_members(store, request)
            )
        except NotSupervisedError as error:
            result, detail = NOT_SUPERVISED, str(error)
        except OwnTreeError as error:
            # Nothing was signalled and nothing is decided: the request stays pending for
            # someone outside the tree to approve.
            return KillOutcome(request, OWN_TREE, f"{error}; the request stays pending")
        else:
            if report.signalled:
                result = STOPPED
                others = len(report.signalled) - 1
                detail = f"stopped pid {request.pid}" + (
                    f" and {counted(others, 'more process', plural='more processes')}"
                    if others else ""
                )
                if report.survivors:
                    detail += f"; {len(report.survivors)} did not die"
            else:
                result, detail = ALREADY_GONE, f"pid {request.pid} had already ended"
    return _decide(store, request, APPROVED, result, detail, decided_by, now)


def _approve_cluster_job(
    store: StateStore, request: KillRequest, decided_by: str, now: float
) -> KillOutcome:
    """A cluster job is stopped by `scancel` of its id, waiting until Slurm says it ended."""
    from swarmdeck.actions.hosts.base import HostError
    from swarmdeck.actions.hosts.slurm import cancel_cluster_job
    from swarmdeck.config import load_config

    assert request.slurm_job_id is not None
    try:
        detail = cancel_cluster_job(load_config(), store, request.slurm_job_id)
    except HostError as error:
        return _decide(store, request, APPROVED, NOT_STOPPED, error.message, decided_by, now)
    return _decide(store, request, APPROVED, STOPPED, detail, decided_by, now)


def deny(store: StateStore, request_id: int, decided_by: str, now: float) -> KillOutcome:
    """Close the request without signalling anything."""
    request = _pending(store, request_id)
    return _decide(store, request, DENIED, DENIED, "nothing signalled", decided_by, now)


def _pending(store: StateStore, request_id: int) -> KillRequest:
    request = kill_request(store, request_id)
    if request is None:
        raise UsageError(f"no kill request {request_id}: `swarmdeck kills` lists them")
    if request.state != PENDING:
        raise RefusedError(f"kill request {request_id} was already decided ({request.state})")
    return request


def _cage_members(store: StateStore, request: KillRequest):
    """The members of the request's job's cage, when it names a running job whose cgroup is
    the cage its runner made (so a process that left the tree but stayed in the cage is stopped
    too)."""
    if request.job_id is None:
        return None
    with store.read() as conn:
        row = job_row(conn, request.job_id)
    if row is None or row["state"] != RUNNING:
        return None
    if (row["pid"], row["start_ticks"]) != (request.pid, request.start_ticks):
        return None
    # Only the cage its runner made in the configured slice: a row anyone can write is no
    # proof that a cgroup's processes are the job's.
    cgroup = job_cage(row, _slice_path())
    if cgroup is None:
        return None
    return lambda: cgroup_pids(cgroup)


def _decide(
    store: StateStore,
    request: KillRequest,
    state: str,
    result: str,
    detail: str,
    decided_by: str,
    now: float,
) -> KillOutcome:
    outcome = KillOutcome(request, result, detail)
    with store.transaction() as conn:
        conn.execute(
            "UPDATE kill_requests SET state = ?, decided_at = ?, decided_by = ?, result = ?"
            " WHERE id = ?",
            (state, now, decided_by, outcome.said, request.id),
        )
        if decided_by != ESCALATION:  # the escalation raises the one alert saying what it did
            verb = "denied" if state == DENIED else "approved"
            raise_alert(
                conn, f"kill:{request.id}", "info", "watchdog", request.host,
                f"kill request {request.id} ({request.command[:80]}) {verb} by {decided_by}:"
                f" {detail}",
                now,
            )
    return outcome
