"""A job run on a peer, as a row of this host's ledger: host = the peer's name.

The row's runner is the driver here (the `peer run` process), its pid and start ticks are the
remote shell's, and `run_dir` is where the copy lives there, so `peer cleanup` can find a run
whose driver died, stop what is left of it and remove its copy. Rows of another host never
count against this host's memory book (the book reads rows of its own host only).

A copy's folder is named for its label, its job id and this ledger's own id: ids start at 1 in
every ledger, so on a peer whose run root several ledgers share (two state folders, two users of
one account) LABEL-ID alone named another ledger's copies too, and one ledger's cleanup removed
another's running job.
"""

from __future__ import annotations

import json
import re
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from swarmdeck.exitcodes import ExitCode
from swarmdeck.ledger import (
    add_job,
    close_job,
    job_row,
    mark_started_remote,
    rows_in_states,
    rows_on_host,
    set_peak,
)
from swarmdeck.ledger import set_driver as ledger_set_driver
from swarmdeck.ledger.schema import ACTIVE, ADMITTED, DONE, LOST
from swarmdeck.probes.procs import ProcessIdentity, own_identity
from swarmdeck.state import now

if TYPE_CHECKING:
    from swarmdeck.actions.hosts.base import Ended, JobSpec
    from swarmdeck.state import StateStore

VIA_PEER = "peer"
"""The `admitted_via` of a peer run's row here: the peer's own runner booked and caged it."""


@dataclass(frozen=True)
class PeerRow:
    """An active peer job as `peer cleanup` finds it."""

    id: int
    label: str
    remote: ProcessIdentity | None
    run_dir: str
    cwd: Path
    """The checkout here it was copied from: fetched artifacts go back there."""
    driver_alive: bool


def slug(label: str) -> str:
    """The label as a folder name: letters, digits, '.', '_', '-' only, at most 40 of them."""
    text = re.sub(r"[^A-Za-z0-9._-]+", "-", label).strip(".-")[:40]
    return text or "job"


def ledger_id(store: StateStore) -> str:
    """This ledger's own id (`swarmdeck_meta.ledger_id`, which the store sets up and checks:
    state/store.py, ledger_mark.py)."""
    return store.ledger_id


def run_dir_name(label: str, job_id: int, ledger: str) -> str:
    """The folder a peer job's copy gets under the host's run root: LABEL-ID-LEDGER."""
    return f"{slug(label)}-{job_id}-{ledger}"


def insert_peer_job(store: StateStore, host: str, job: JobSpec) -> int:
    """The row of a peer job about to be copied and started; its driver is this process."""
    driver = own_identity()
    with store.transaction() as conn:
        return add_job(conn, {
            "label": job.label, "host": host, "fingerprint": job.fingerprint,
            "argv": json.dumps(list(job.argv)), "cwd": str(job.cwd), "state": ADMITTED,
            "runner_pid": driver.pid, "runner_start_ticks": driver.start_ticks,
            "booked": job.booking, "cap": job.cap, "admitted_via": VIA_PEER,
            "threads": job.threads, "declared_cap": job.declared_cap, "detached": 0,
            "created_at": now(), "admitted_at": now(),
        })


def mark_peer_started(
    store: StateStore, job_id: int, remote: ProcessIdentity, run_dir: str
) -> None:
    with store.transaction() as conn:
        mark_started_remote(conn, job_id, remote.pid, remote.start_ticks, run_dir, now())


def set_driver(
    store: StateStore, job_id: int, driver: ProcessIdentity, output: str | None
) -> None:
    """A new driver (a detached one, or one attached again) takes the row over."""
    with store.transaction() as conn:
        ledger_set_driver(conn, job_id, driver.pid, driver.start_ticks, output)


def end_peer_job(
    store: StateStore, job_id: int, exit_code: int, outcome: str, ended: Ended | None = None
) -> None:
    """Close the row; with the peak the peer's runner measured, remember it here too, under the
    row's fingerprint (made here, stable across runs), so a workload run only on the peer is
    booked from what it took, here and by `dispatch`, never blind."""
    with store.transaction() as conn:
        close_job(conn, job_id, DONE, outcome, exit_code, now())
        if ended is None or ended.peak is None:
            return
        set_peak(conn, job_id, ended.peak, ended.hit_ceiling)
        row = job_row(conn, job_id)
        if row is None or not row["fingerprint"]:
            return
        conn.execute(
            "INSERT INTO peaks (fingerprint, job_id, peak, hit_ceiling, cap, duration, outcome)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                row["fingerprint"], job_id, ended.peak, int(ended.hit_ceiling),
                ended.cap or row["cap"], ended.duration, outcome,
            ),
        )


def mark_peer_lost(store: StateStore, job_id: int, outcome: str) -> None:
    """Close the row as lost, with the exit code every lost row carries."""
    with store.transaction() as conn:
        close_job(conn, job_id, LOST, outcome, ExitCode.LOST, now())


def _alive(row: sqlite3.Row) -> bool:
    if row["runner_pid"] is None or row["runner_start_ticks"] is None:
        return False
    return ProcessIdentity(row["runner_pid"], row["runner_start_ticks"]).is_alive()


def active_peer_rows(store: StateStore, host: str) -> list[PeerRow]:
    """The host's active rows, each saying whether its driver still lives."""
    with store.read() as conn:
        rows = rows_in_states(conn, host, ACTIVE)
    return [
        PeerRow(
            id=row["id"],
            label=row["label"] or "",
            remote=ProcessIdentity(row["pid"], row["start_ticks"])
            if row["pid"] is not None and row["start_ticks"] is not None
            else None,
            run_dir=row["run_dir"] or "",
            cwd=Path(row["cwd"] or "."),
            driver_alive=_alive(row),
        )
        for row in rows
    ]


def abandoned_run_dirs(store: StateStore, host: str) -> dict[str, int]:
    """Folder names under the host's run root that this ledger's rows of `host` gave out and
    no live driver uses: a copy that failed or whose driver died before the job started (its
    row never learnt the folder), or one a failed clean left. Name -> job id."""
    ledger = ledger_id(store)
    with store.read() as conn:
        rows = rows_on_host(conn, host)
    return {
        run_dir_name(row["label"] or "", row["id"], ledger): row["id"]
        for row in rows
        if not (row["state"] in ACTIVE and _alive(row))
    }
