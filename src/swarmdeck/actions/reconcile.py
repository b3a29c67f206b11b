"""Ledger rows whose runner died (SIGKILL, a crash) are marked lost and their cages cleared.

A runner killed outright cannot close its own row, and a row left "running" would hold its
booking forever. The probes only report such rows; this module acts on them. Admission calls
`mark_lost_jobs` inside its own write transaction, so a dead runner's booking is given back
exactly when another job needs the room, and the snapshot calls `reconcile` so `status` and the
app never show a dead job as running. A row is not proof enough to signal anything: only a
cage its row's runner made is emptied and removed (`clear_lost`).
"""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass
from typing import TYPE_CHECKING

from swarmdeck.actions.cage import CageError, remove_cgroup
from swarmdeck.actions.cage.base import made_cage
from swarmdeck.actions.kill import OwnTreeError, stop_tree, would_stop_itself
from swarmdeck.exitcodes import ExitCode
from swarmdeck.ledger import close_job, rows_in_states
from swarmdeck.ledger.schema import ACTIVE, LOST
from swarmdeck.probes.cgroups import cgroup_pids, chosen_site, slice_sites
from swarmdeck.probes.procs import ProcessIdentity
from swarmdeck.state import now

if TYPE_CHECKING:
    from collections.abc import Callable

    from swarmdeck.state import StateStore

LOST_OUTCOME = "lost: its runner is gone"
CLEAR_GRACE = 2.0


@dataclass(frozen=True)
class LostJob:
    """A job whose runner is gone: what is needed to clear what it left behind."""

    id: int
    job: ProcessIdentity | None
    cgroup: str | None


def runner_alive(row: sqlite3.Row) -> bool:
    """Whether the runner recorded in the row is still the same live process."""
    if row["runner_pid"] is None or row["runner_start_ticks"] is None:
        return False
    return ProcessIdentity(row["runner_pid"], row["runner_start_ticks"]).is_alive()


def _dead_runner_rows(conn: sqlite3.Connection, host: str) -> list[sqlite3.Row]:
    return [row for row in rows_in_states(conn, host, ACTIVE) if not runner_alive(row)]


def mark_lost_jobs(
    conn: sqlite3.Connection, host: str, slice_path: str | None
) -> list[LostJob]:
    """Mark active rows of dead runners lost; call inside a write transaction. A row whose
    cgroup is not the cage its runner made in `slice_path` is closed with a note saying so,
    and nothing of it is to be cleared.

    A row whose cage holds this very process or one of its ancestors (a job that ran
    `swarmdeck status` or `run` outlived its runner) is left as it is: clearing the cage would
    stop the caller, and a row closed without its cage cleared would leave the cage for good
    (nothing looks at a closed row again). The next caller outside the cage closes it."""
    lost = []
    for row in _dead_runner_rows(conn, host):
        cgroup = row["cgroup"] or None
        made = cgroup is None or (
            slice_path is not None
            and row["runner_pid"] is not None
            and made_cage(cgroup, slice_path, row["id"], row["runner_pid"])
        )
        job = (
            ProcessIdentity(row["pid"], row["start_ticks"])
            if made and row["pid"] is not None and row["start_ticks"] is not None
            else None
        )
        found = LostJob(row["id"], job, cgroup if made else None)
        if _holds_caller(found):
            continue
        outcome = LOST_OUTCOME if made else (
            f"{LOST_OUTCOME}; its cgroup {cgroup} is not a cage swarmdeck made in"
            f" {slice_path or 'the configured slice'}: left alone"
        )
        close_job(conn, row["id"], LOST, outcome, ExitCode.LOST, now())
        lost.append(found)
    return lost


def _what_to_stop(job: LostJob) -> tuple[ProcessIdentity | None, Callable[[], list[int]]] | None:
    """The job's process (only while it is in its cage) and the cage's member list; None when
    there is no cage of its left to clear."""
    cgroup = job.cgroup
    if cgroup is None or not os.path.exists(cgroup):
        return None
    target = job.job if job.job is not None and job.job.pid in cgroup_pids(cgroup) else None
    return target, lambda: cgroup_pids(cgroup)


def _holds_caller(job: LostJob) -> bool:
    """Whether clearing the lost job's cage would stop this process or an ancestor."""
    what = _what_to_stop(job)
    return what is not None and would_stop_itself(*what)


def clear_lost(lost: list[LostJob]) -> None:
    """Stop whatever a lost job left running in its cage, then remove the cage. Its job's
    process is stopped with the cage's members only while it is one of them.

    Any same-user process can write a row, so only a cgroup that is the cage its row's runner
    made (right inside the configured slice, named for that job and runner:
    cage.base.made_cage) is emptied and removed. A row naming any other cgroup is closed as
    lost with a note, and the cgroup and its processes are left alone."""
    for job in lost:
        what = _what_to_stop(job)
        if what is None:
            continue
        target, members = what
        supervised = {target} if target is not None else set()
        try:
            stop_tree(
                target, supervised, grace=CLEAR_GRACE, members=members, cgroup=job.cgroup
            )
        except OwnTreeError:
            # An ancestor of this command joined the cage after mark_lost_jobs looked (it
            # leaves such a row open): nothing is stopped that would stop the caller.
            continue
        try:
            remove_cgroup(job.cgroup)
        except CageError:
            # A process stuck in the kernel keeps it busy past the retries. The row is closed
            # and its booking given back; the empty cage holds no booking of its own.
            continue


def configured_slice(slice_setting: str) -> str | None:
    """The slice the configured backends use, where the cages of this host's rows lie."""
    site = chosen_site(slice_sites(slice_setting))
    return site.path if site is not None else None


def reconcile(store: StateStore, host: str, slice_setting: str) -> list[int]:
    """Mark lost and clear every job on `host` whose runner is gone; returns their ids.
    `slice_setting` is the config's `memory.slice`: only cages in that slice are cleared.

    The app calls this on every refresh: the write lock, which runners and hooks wait on, is
    taken only when a read has found a dead runner (and the rows are checked again under it).
    """
    with store.read() as conn:
        if not _dead_runner_rows(conn, host):
            return []
    slice_path = configured_slice(slice_setting)
    with store.transaction() as conn:
        lost = mark_lost_jobs(conn, host, slice_path)
    clear_lost(lost)
    return [job.id for job in lost]
