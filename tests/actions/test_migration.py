"""Migrating a queued job withdraws it here: its row ends as moved, naming where it runs now,
and its own runner, named by pid and start ticks in the row, is stopped and says so; no other
process is ever signalled, and a runner whose row moved never starts the job here."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cagekit import MIB, mem_total, new_slice, remove_tree, write_config

from ledger_rows import add_job
from ssh_server import servers as servers
from swarmdeck.actions.migration import (
    MigrationOption,
    MigrationRefused,
    launch,
    peer_run_argv,
    withdraw_queued,
)
from swarmdeck.exitcodes import ExitCode
from swarmdeck.probes.memory_book import ledger_jobs
from swarmdeck.probes.procs import identity
from swarmdeck.state import StateStore
from swarmdeck.views.jobs import state_cell
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


def test_a_queued_job_that_moved_is_withdrawn_and_its_row_says_where_it_runs(
    tmp_path: Path, v1_slice: Path
) -> None:
    runner = _queued_runner(tmp_path, v1_slice)
    store = StateStore.open_default()
    try:
        wait_for(lambda: (_row(store) or {}).get("state") == "queued", timeout=60)
        job_id = _row(store)["id"]
        assert withdraw_queued(store, job_id, "box2", 6) == (
            f"job {job_id} withdrawn here: moved to box2 (job 6)"
        )
        assert runner.wait(timeout=30) == ExitCode.MOVED == 242
        row = _row(store)
        assert (row["state"], row["exit_code"], row["outcome"]) == (
            "moved", 242, "moved to box2 (job 6)"
        )
        assert row["ended_at"] is not None
        assert runner.stderr.read().strip().splitlines()[-1] == (
            f"swarmdeck: job {job_id} moved to box2 (job 6): it runs there; nothing ran here"
        )
        [job] = [job for job in ledger_jobs(store) if job.id == job_id]
        assert state_cell(job).plain == "moved to box2 (job 6)"
    finally:
        if runner.poll() is None:
            runner.kill()
        store.close()


def test_a_runner_whose_row_moved_never_starts_the_job_here_when_room_frees(
    tmp_path: Path, v1_slice: Path
) -> None:
    marker = tmp_path / "ran here"
    write_config(tmp_path / "config.toml", v1_slice, 256 * MIB, default_prediction="64M")
    store = StateStore.open_default()
    holder = add_job(store, label="holds the slice", booked=256 * MIB, cap=256 * MIB)
    runner = subprocess.Popen(
        [SWARMDECK, "run", "--wait", "600", "--", "touch", str(marker)], env=os.environ.copy(),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        wait_for(lambda: (_row(store) or {}).get("state") == "queued", timeout=60)
        job_id = _row(store)["id"]
        # The row moves as withdraw_queued moves it, and the room frees before the runner is
        # told: its next look at the book must not admit it.
        with store.transaction() as conn:
            conn.execute(
                "UPDATE jobs SET state = 'moved', exit_code = 242, outcome = ?, ended_at = 1"
                " WHERE id = ?", ("moved to box2 (job 6)", job_id),
            )
            conn.execute("UPDATE jobs SET state = 'done', exit_code = 0 WHERE id = ?", (holder,))
        assert runner.wait(timeout=60) == 242
        assert not marker.exists()
        assert _row(store)["state"] == "moved"
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
        assert "gone: nothing withdrawn" in withdraw_queued(store, job_id, "box2", 6)
        time.sleep(0.5)
        assert runner.poll() is None
    finally:
        runner.kill()
        runner.wait(timeout=30)
        store.close()


@pytest.mark.parametrize(
    ("recorded", "flags"),
    [
        ({"declared_cap": "50%", "cap": 96 * MIB, "threads": 4},
         ["--cap", "50%", "--threads", "4"]),
        ({"declared_cap": "", "cap": 96 * MIB}, []),
        ({"cap": 96 * MIB}, ["--cap", "96M"]),
    ],
    ids=["declared", "none-declared", "not-recorded"],
)
def test_the_peer_run_line_repeats_what_the_job_declared(
    isolated_home: Path, recorded: dict, flags: list[str]
) -> None:
    """A queued job moves with the --cap it was given (its peer books one not given from its
    own history there) and its --threads; a row from before the ledger recorded the declared
    cap keeps the cap its cage would have had."""
    store = StateStore.open_default()
    add_job(store, label="moves", state="queued", argv=["make", "-j4"], **recorded)
    [job] = ledger_jobs(store)
    argv = peer_run_argv("box2", job)
    assert list(argv) == ["swarmdeck", "peer", "run", "box2", "--detach", "--label", "moves",
                          *flags, "--", "make", "-j4"]


def test_the_launch_refuses_a_job_that_ended_after_its_option_was_made(tmp_path: Path) -> None:
    """The pane's option was made while the job was queued; a kill ended it before Enter: the
    launch reads the row again and starts nothing on the peer."""
    store = StateStore.open_default()
    try:
        job_id = add_job(store, label="suite", state="queued")
        option = MigrationOption("box2", True, 1 << 30, 2, "—", "", ("swarmdeck", "status"),
                                 str(tmp_path), job_id)
        with store.transaction() as conn:
            conn.execute("UPDATE jobs SET state = 'done', exit_code = 143,"
                         " outcome = 'killed by SIGTERM' WHERE id = ?", (job_id,))
        with pytest.raises(MigrationRefused, match=f"job {job_id} is over .*r reruns it"):
            launch(option, store)
    finally:
        store.close()


FAKE_RUNNER = (
    "import signal, time; signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM});"
    " print('ready', flush=True); time.sleep(300)"
)
"""A process whose command line holds `swarmdeck run` and that is not one; it blocks SIGTERM,
so a signal sent to it stays pending where the test can see it."""


def term_pending(pid: int) -> bool:
    """Whether SIGTERM waits, blocked, for the process (its ShdPnd mask in /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("ShdPnd:"):
            return bool(int(line.split()[1], 16) & (1 << (signal.SIGTERM - 1)))
    raise AssertionError("no ShdPnd line")


def test_a_process_that_only_looks_like_a_runner_is_never_signalled(tmp_path: Path) -> None:
    """A row names, by its pid and start ticks, a `python3 … swarmdeck run` that is not one: the
    withdraw once sent it SIGTERM. Now it signals nothing (the real runner finds its row moved
    by itself); the row still ends as moved."""
    fake = subprocess.Popen(
        [sys.executable, "-c", FAKE_RUNNER, "swarmdeck", "run", "--", "true"],
        stdout=subprocess.PIPE, text=True, start_new_session=True,
    )
    store = StateStore.open_default()
    try:
        assert fake.stdout.readline() == "ready\n"
        me = identity(fake.pid)
        assert me is not None
        job_id = add_job(store, label="names a look-alike", state="queued",
                         runner_pid=me.pid, runner_start_ticks=me.start_ticks)
        said = withdraw_queued(store, job_id, "box2", 6)
        assert not term_pending(fake.pid), "the look-alike got SIGTERM"
        assert said == f"job {job_id} withdrawn here: moved to box2 (job 6)"
        assert _row(store)["state"] == "moved"
    finally:
        fake.kill()
        fake.wait()
        store.close()


def test_a_queued_job_migrated_to_a_peer_runs_there_and_its_row_here_says_moved(
    tmp_path: Path, servers, v1_slice: Path
) -> None:
    """The whole move as the migrate pane makes it: a real queued runner here, the peer on
    asyncssh's server on 127.0.0.1 running this swarmdeck, the detached launch, the withdrawal."""
    from peerkit import start_peer

    from swarmdeck.actions.migration import launch, migration_options
    from swarmdeck.config import load_config
    from swarmdeck.probes.peer import PeerProber

    local = new_slice()
    try:
        peer = start_peer(tmp_path, servers, v1_slice, extra=(
            f'[memory]\nslice = "{local}"\nreserve = "{mem_total() - 64 * MIB}B"\n'
            'default_prediction = "32M"\nmargin = "1M"\nsample_interval = 0.05\n\n'))
        store = StateStore.open_default()
        add_job(store, label="holds the slice", booked=64 * MIB, cap=64 * MIB)
        runner = subprocess.Popen(
            [SWARMDECK, "run", "--wait", "600", "--label", "build", "--", "sh", "job.sh"],
            cwd=peer.work, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        try:
            wait_for(lambda: (_row(store) or {}).get("state") == "queued", timeout=60)
            [job] = [job for job in ledger_jobs(store) if job.label == "build"]
            config = load_config()
            prober = PeerProber()
            prober.read_all(config)
            prober.close()
            [option] = migration_options(config, job)
            launched = launch(option, store)
            assert launched.code == 0, launched.line
            with store.read() as conn:
                there = conn.execute("SELECT id FROM jobs WHERE host = 'box2'").fetchone()
            assert launched.job_id == there["id"]
            said = withdraw_queued(store, job.id, option.host, launched.job_id)
            assert said == f"job {job.id} withdrawn here: moved to box2 (job {there['id']})"
            assert runner.wait(timeout=60) == 242
            with store.read() as conn:
                row = conn.execute("SELECT * FROM jobs WHERE id = ?", (job.id,)).fetchone()
            assert (row["state"], row["exit_code"], row["outcome"]) == (
                "moved", 242, f"moved to box2 (job {there['id']})")
            wait_for(lambda: ledger_jobs(store, "box2")[0].state == "done", timeout=60)
        finally:
            if runner.poll() is None:
                runner.kill()
            store.close()
    finally:
        remove_tree(local)
