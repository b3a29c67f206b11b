"""Migrating a queued job withdraws it here: its own runner, named by pid and start ticks in
its row, is stopped and the row ends as given up; no other process is ever signalled."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from cagekit import MIB, write_config

from ledger_rows import add_job
from swarmdeck.actions.migration import is_runner, withdraw_queued
from swarmdeck.state import StateStore
from waiting import wait_for

SWARMDECK = str(Path(sys.executable).with_name("swarmdeck"))


def _queued_runner(tmp_path: Path, v1_slice: Path) -> subprocess.Popen[str]:
    """A real `swarmdeck run` that queues behind a running job (this test's) booking the slice."""
    write_config(tmp_path / "config.toml", v1_slice, 256 * MIB, default_prediction="64M")
    store = StateStore.open_default()
    add_job(store, label="holds the slice", booked=256 * MIB, cap=256 * MIB)
    store.close()
    return subprocess.Popen(
        [SWARMDECK, "run", "--wait", "600", "--", "true"], env=os.environ.copy(),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def _row(store: StateStore) -> dict | None:
    with store.read() as conn:
        row = conn.execute("SELECT * FROM jobs WHERE label != 'holds the slice'").fetchone()
    return dict(row) if row is not None else None


def test_a_queued_job_is_withdrawn_by_stopping_its_own_runner(
    tmp_path: Path, v1_slice: Path
) -> None:
    runner = _queued_runner(tmp_path, v1_slice)
    store = StateStore.open_default()
    try:
        wait_for(lambda: (_row(store) or {}).get("state") == "queued", timeout=60)
        job_id = _row(store)["id"]
        assert withdraw_queued(store, job_id) == f"job {job_id} withdrawn here"
        assert runner.wait(timeout=30) == 143
        assert _row(store)["state"] != "queued"
    finally:
        if runner.poll() is None:
            runner.kill()
        store.close()


def test_a_runner_whose_start_ticks_changed_is_never_signalled(
    tmp_path: Path, v1_slice: Path
) -> None:
    runner = _queued_runner(tmp_path, v1_slice)
    store = StateStore.open_default()
    try:
        wait_for(lambda: (_row(store) or {}).get("state") == "queued", timeout=60)
        job_id = _row(store)["id"]
        with store.transaction() as conn:
            conn.execute(
                "UPDATE jobs SET runner_start_ticks = runner_start_ticks + 1 WHERE id = ?",
                (job_id,),
            )
        assert "gone: nothing withdrawn" in withdraw_queued(store, job_id)
        time.sleep(0.5)
        assert runner.poll() is None
    finally:
        runner.kill()
        runner.wait(timeout=30)
        store.close()


def test_only_a_swarmdeck_run_counts_as_a_runner() -> None:
    assert is_runner(["/usr/bin/python3", "/x/.venv/bin/swarmdeck", "run", "--", "true"])
    assert is_runner(["/usr/bin/python3", "-m", "swarmdeck.cli", "run", "--detach", "--", "x"])
    assert not is_runner(["/usr/bin/python3", "-m", "pytest", "tests/swarmdeck/run"])
    assert not is_runner(["/x/swarmdeck", "status"])


def test_a_row_naming_another_process_as_its_runner_is_not_signalled(tmp_path: Path) -> None:
    store = StateStore.open_default()
    try:
        job_id = add_job(store, label="claims this test as its runner", state="queued")
        assert "not a swarmdeck run" in withdraw_queued(store, job_id)
    finally:
        store.close()
