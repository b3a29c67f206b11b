"""The approve flow under Pilot, end to end: a real stalled job's finding → `k` kill request →
`y` modal (Cancel focused, the tree shown) → Approve → the tree is gone → an alert says so;
`d` leaves it running; a request whose process ended (or whose pid was reused) is dismissed,
not approved, and nothing is signalled; Alerts shows merged counts; an acknowledgement says
who made it."""

from __future__ import annotations

import contextlib
import getpass
import json
import os
import signal
import subprocess
import sys
import time
from functools import partial
from pathlib import Path

from fixed_room import record_watchdog
from rendered import plain
from textual.widgets import Button, Static

from swarmdeck.actions.alerts import raise_alert
from swarmdeck.actions.cage.base import cage_name
from swarmdeck.app.approve import ApproveScreen
from swarmdeck.app.keyed_table import KeyedTable
from swarmdeck.app.main import SwarmdeckApp
from swarmdeck.app.record_detail import FindingDetail
from swarmdeck.app.watchdog import WatchdogPanel
from swarmdeck.config import load_config
from swarmdeck.probes.host import local_host_name
from swarmdeck.probes.procs import identity, own_identity
from swarmdeck.probes.store_rows import open_alerts
from swarmdeck.snapshot import take_snapshot
from swarmdeck.state import StateStore
from swarmdeck.watchdog.loop import Watchdog

TREE = (
    "import subprocess, time; subprocess.Popen(['sleep', '300']);"
    " print('ready', flush=True); time.sleep(300)"
)
DEADLINE = 30.0


def _config(home: Path):
    """Tiny watchdog thresholds; the `[memory]` table of the test's own slice (`own_slice`)
    is kept."""
    config = home / "config.toml"
    kept = config.read_text()
    config.write_text(
        (kept if kept.startswith("[memory]") else "")
        + "[ui]\nrefresh_interval = 0.2\n"
        "[watchdog]\ninterval = 0.1\nmin_duration = 0\noutput_stall = 60\n"
    )
    return load_config()


def _stalled_job(
    home: Path, store: StateStore, ticks_offset: int = 0, slice_path: Path | None = None
):
    """A real process tree with a ledger row whose output has not grown for ten minutes; with
    `slice_path`, its process is in the cage its runner (this test) would have made there, so
    it is supervised (watchdog/kills.supervised_set)."""
    proc = subprocess.Popen([sys.executable, "-c", TREE], stdout=subprocess.PIPE, text=True,
                            start_new_session=True)
    assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
    me, runner = identity(proc.pid), own_identity()
    assert me is not None
    output = home / "job.out"
    output.write_text("step 1\n")
    then = time.time() - 600
    os.utime(output, (then, then))
    with store.transaction() as conn:
        conn.execute(
            "INSERT INTO jobs (label, host, argv, cwd, state, pid, start_ticks, runner_pid,"
            " runner_start_ticks, started_at, output_path) VALUES ('train', ?, ?, '/w',"
            " 'running', ?, ?, ?, ?, ?, ?)",
            (local_host_name(), json.dumps(["python", "train.py"]), proc.pid,
             me.start_ticks + ticks_offset, runner.pid, runner.start_ticks, then, str(output)),
        )
        if slice_path is not None:
            [job_id] = conn.execute("SELECT max(id) FROM jobs").fetchone()
            cage = slice_path / cage_name(job_id, runner.pid)
            cage.mkdir()
            (cage / "cgroup.procs").write_text(str(proc.pid))
            conn.execute("UPDATE jobs SET cgroup = ? WHERE id = ?", (str(cage), job_id))
    return proc


def _app(config, store) -> SwarmdeckApp:
    return SwarmdeckApp(
        config, store, prober=partial(take_snapshot, config, store),
        watchdog=Watchdog(config, store),
    )


async def _until(pilot, condition) -> None:
    deadline = time.monotonic() + DEADLINE
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        await pilot.pause(0.05)


def _stop(proc: subprocess.Popen[str]) -> None:
    """Kill the job's whole session (its sleep child too), then reap it."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


async def _request_kill(app, pilot) -> None:
    findings = app.query_one("#findings-table", KeyedTable)
    await _until(pilot, lambda: findings.row_count == 1)
    findings.focus()
    await pilot.press("k")
    kills = app.query_one("#kills-table", KeyedTable)
    await _until(pilot, lambda: kills.row_count == 1)


async def test_finding_to_approved_kill_stops_the_tree_and_records_an_alert(
    isolated_home, own_slice
):
    store = StateStore.open_default()
    config = _config(isolated_home)
    proc = _stalled_job(isolated_home, store, slice_path=own_slice)
    child = int(Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()[0])
    child_ident = identity(child)
    assert child_ident is not None
    app = _app(config, store)
    try:
        async with app.run_test(size=(160, 60)) as pilot:
            await _request_kill(app, pilot)
            await pilot.press("y")
            await _until(pilot, lambda: isinstance(app.screen, ApproveScreen))
            modal = app.screen
            assert app.focused is modal.query_one("#cancel", Button)
            shown = modal.query_one("#approve-facts")
            facts = "\n".join(strip.text for strip in shown.render_lines(shown.size.region))
            assert f"pid:     {proc.pid}" in facts and "python" in facts and "user:" in facts
            tree = plain(modal.query_one("#approve-tree", Static).content)
            assert str(proc.pid) in tree and str(child) in tree
            await pilot.click("#approve")
            await _until(pilot, lambda: proc.poll() is not None and not child_ident.is_alive())
            await _until(pilot, lambda: any("approved" in a.message for a in open_alerts(store)))
            await _until(pilot, lambda: any("stopped" in n.message for n in app._notifications))
            said = [n.message for n in app._notifications if "stopped" in n.message]
            assert said == [f"kill request 1: stopped pid {proc.pid} and 1 more process"], said
    finally:
        _stop(proc)


async def test_cancel_and_deny_leave_the_tree_running(isolated_home):
    store = StateStore.open_default()
    config = _config(isolated_home)
    proc = _stalled_job(isolated_home, store)
    app = _app(config, store)
    try:
        async with app.run_test(size=(160, 60)) as pilot:
            await _request_kill(app, pilot)
            await pilot.press("y")
            await _until(pilot, lambda: isinstance(app.screen, ApproveScreen))
            await pilot.press("enter")  # Cancel has the focus
            await _until(pilot, lambda: not isinstance(app.screen, ApproveScreen))
            app.query_one("#kills-table", KeyedTable).focus()
            await pilot.press("d")
            kills = app.query_one("#kills-table", KeyedTable)
            await _until(pilot, lambda: kills.row_count == 0)
            await pilot.pause(0.3)
            assert proc.poll() is None
        with store.read() as conn:
            [state] = conn.execute("SELECT state FROM kill_requests").fetchone()
        assert state == "denied"
    finally:
        _stop(proc)


async def test_a_request_whose_process_ended_is_dismissed_not_approved(isolated_home):
    store = StateStore.open_default()
    config = _config(isolated_home)
    proc = _stalled_job(isolated_home, store)
    app = _app(config, store)
    try:
        async with app.run_test(size=(160, 60)) as pilot:
            await _request_kill(app, pilot)
            _stop(proc)
            await pilot.press("y")
            await _until(pilot, lambda: isinstance(app.screen, ApproveScreen))
            assert not app.screen.query("#approve")
            await pilot.click("#dismiss")
            kills = app.query_one("#kills-table", KeyedTable)
            await _until(pilot, lambda: kills.row_count == 0)
        with store.read() as conn:
            [result] = conn.execute("SELECT result FROM kill_requests").fetchone()
        assert result.startswith("already gone"), result
    finally:
        _stop(proc)


async def test_a_request_whose_pid_was_reused_is_refused(isolated_home):
    store = StateStore.open_default()
    config = _config(isolated_home)
    # The ledger remembers other start ticks than the process now holding the pid has.
    proc = _stalled_job(isolated_home, store, ticks_offset=-1)
    app = _app(config, store)
    try:
        async with app.run_test(size=(160, 60)) as pilot:
            await _request_kill(app, pilot)
            await pilot.press("y")
            await _until(pilot, lambda: isinstance(app.screen, ApproveScreen))
            await pilot.click("#dismiss")  # the process it named is gone: nothing to stop
            await _until(pilot, lambda: any(
                "pid reused" in a.message or "another process" in a.message
                for a in open_alerts(store)
            ))
            await pilot.pause(0.3)
            assert proc.poll() is None
    finally:
        _stop(proc)


async def test_alerts_show_merged_counts(isolated_home):
    store = StateStore.open_default()
    config = _config(isolated_home)
    for _ in range(3):
        with store.transaction() as conn:
            raise_alert(conn, "slice-full", "warning", "runner", "vm", "the slice was full",
                        time.time())
    app = _app(config, store)
    async with app.run_test(size=(160, 60)) as pilot:
        table = app.query_one("#alerts-table", KeyedTable)
        await _until(pilot, lambda: table.row_count == 1)
        [row] = [table.get_row(key) for key in table.row_keys]
        assert "3" in [str(cell) for cell in row]


async def test_readonly_refuses_a_kill_request(isolated_home):
    store = StateStore.open_default()
    config = _config(isolated_home)
    proc = _stalled_job(isolated_home, store)
    app = SwarmdeckApp(config, store, prober=partial(take_snapshot, config, store),
                       watchdog=Watchdog(config, store), readonly=True)
    try:
        async with app.run_test(size=(160, 60)) as pilot:
            findings = app.query_one("#findings-table", KeyedTable)
            await _until(pilot, lambda: findings.row_count == 1)
            findings.focus()
            await pilot.press("k")
            await pilot.pause(0.3)
        with store.read() as conn:
            assert conn.execute("SELECT count(*) FROM kill_requests").fetchone()[0] == 0
    finally:
        _stop(proc)


async def test_an_acknowledgement_shows_who_made_it(isolated_home):
    """`a` records the time and the person's user name (the README's promise): the toast says
    who acknowledged, for a finding and for an alert, and the finding's detail keeps saying it."""
    store = StateStore.open_default()
    config = _config(isolated_home)
    record_watchdog(store, time.time())
    with store.transaction() as conn:
        raise_alert(conn, "slice-full", "warning", "runner", "vm", "the slice was full",
                    time.time())
    me = getpass.getuser()
    app = SwarmdeckApp(config, store, prober=partial(take_snapshot, config, store))
    async with app.run_test(size=(160, 60)) as pilot:
        findings = app.query_one("#findings-table", KeyedTable)
        await _until(pilot, lambda: findings.row_count == 2)
        findings.focus()
        finding = app.query_one(WatchdogPanel).selected_finding()
        assert finding is not None
        await pilot.press("a")
        await _until(pilot, lambda: _notes(app))
        assert _notes(app) == [f"finding {finding.id} acknowledged by {me}"]
        await pilot.press("enter")
        await _until(pilot, lambda: isinstance(app.screen, FindingDetail))
        facts = app.screen.query_one("#record-facts")
        await _until(pilot, lambda: f"ago by {me}" in str(facts.render()))
        await pilot.press("escape", "7", "a")
        # By the note's words, not its place: on a busy machine the finding's note may have
        # timed out by now.
        await _until(pilot, lambda: any(note.startswith("alert ") for note in _notes(app)))
        [alert] = open_alerts(store) or [None]
        assert alert is None, "it left the panel"
        [said] = [note for note in _notes(app) if note.startswith("alert ")]
        assert said.endswith(f" acknowledged by {me}; it leaves the panel"), _notes(app)


def _notes(app) -> list[str]:
    return [n.message for n in app._notifications]
