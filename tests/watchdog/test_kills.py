"""Kill requests: approval stops a supervised tree and says so; denial, a stranger, a reused pid
and a process already gone are never signalled; escalation acts only when its policy says."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from scene_kit import SWARMDECK, caged_job, insert_job, write_watchdog_config

from swarmdeck.errors import RefusedError, UsageError
from swarmdeck.probes.procs import ProcessIdentity, identity, read_stat
from swarmdeck.probes.store_rows import Finding, open_alerts
from swarmdeck.snapshot import take_snapshot
from swarmdeck.watchdog.escalation import escalates
from swarmdeck.watchdog.findings import finding_by_id
from swarmdeck.watchdog.kills import (
    ALREADY_GONE,
    NOT_SUPERVISED,
    PID_REUSED,
    STOPPED,
    approve,
    deny,
    recent_kill_requests,
    request_kill,
    stop_preview,
)
from swarmdeck.watchdog.loop import Watchdog

TREE = (
    "import subprocess, sys, time; subprocess.Popen(['sleep', '300']);"
    " print('ready', flush=True); time.sleep(300)"
)
DEADLINE = 30.0


def finding_for(pid: int, ticks: int, job_id: int | None = None, **extra) -> Finding:
    fields = dict(
        id=1, key=f"output_not_growing:job{job_id}", rule="output_not_growing",
        subject=f"job #{job_id}", severity="warning", message="no output for 5m",
        first_seen_at=0.0, last_seen_at=0.0, count=1, acknowledged_at=None, job_id=job_id,
        pid=pid, start_ticks=ticks,
    )
    fields.update(extra)
    return Finding(**fields)


def start_tree(processes) -> tuple[subprocess.Popen[str], ProcessIdentity]:
    proc = processes(sys.executable, "-c", TREE, stdout=subprocess.PIPE)
    assert proc.stdout.readline() == "ready\n"
    me = identity(proc.pid)
    assert me is not None
    return proc, me


def children_of(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(word) for word in text.split()]


def gone(ident: ProcessIdentity) -> bool:
    deadline = time.monotonic() + DEADLINE
    while ident.is_alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    return not ident.is_alive()


def test_approval_stops_the_whole_supervised_tree_and_raises_an_alert(
    store, processes, own_slice
):
    proc, me = start_tree(processes)
    [child] = children_of(proc.pid)
    child_ident = identity(child)
    job_id = caged_job(store, own_slice, proc.pid, started_at=time.time())
    request = request_kill(store, finding_for(me.pid, me.start_ticks, job_id), "tester", 1.0)
    assert {m.pid for m in stop_preview(store, request)} == {proc.pid, child}
    outcome = approve(store, request.id, "tester", time.time(), grace=2.0)
    assert outcome.result == STOPPED
    proc.wait(timeout=DEADLINE)
    assert child_ident is not None and gone(child_ident)
    [alert] = open_alerts(store)
    assert f"kill request {request.id}" in alert.message and "approved by tester" in alert.message
    [(_, result)] = recent_kill_requests(store)
    assert result == f"stopped pid {proc.pid} and 1 more process"


def test_denial_signals_nothing(store, processes):
    proc, me = start_tree(processes)
    job_id = insert_job(store, proc.pid, started_at=time.time())
    request = request_kill(store, finding_for(me.pid, me.start_ticks, job_id), "tester", 1.0)
    deny(store, request.id, "tester", time.time())
    time.sleep(0.2)
    assert proc.poll() is None
    with pytest.raises(Exception, match="already decided"):
        approve(store, request.id, "tester", time.time())
    [alert] = open_alerts(store)
    assert alert.message.endswith("denied by tester: nothing signalled")
    assert alert.message.count("denied") == 1, alert.message


def test_a_pid_whose_start_ticks_changed_is_refused_and_left_running(store, processes):
    proc, me = start_tree(processes)
    job_id = insert_job(store, proc.pid, started_at=time.time(), start_ticks=me.start_ticks - 1)
    # The request names the pid with other start ticks: the process it meant is gone and the
    # pid now names this one.
    request = request_kill(store, finding_for(me.pid, me.start_ticks - 1, job_id), "t", 1.0)
    outcome = approve(store, request.id, "tester", time.time(), grace=1.0)
    assert outcome.result == PID_REUSED
    time.sleep(0.2)
    assert proc.poll() is None


def test_a_process_outside_the_supervised_set_is_refused(store, processes):
    proc, me = start_tree(processes)
    request = request_kill(store, finding_for(me.pid, me.start_ticks), "tester", 1.0)
    outcome = approve(store, request.id, "tester", time.time(), grace=1.0)
    assert outcome.result == NOT_SUPERVISED
    time.sleep(0.2)
    assert proc.poll() is None


def test_a_process_already_gone_is_said_so(store, processes):
    proc, me = start_tree(processes)
    request = request_kill(store, finding_for(me.pid, me.start_ticks), "tester", 1.0)
    proc.kill()
    proc.wait()
    assert approve(store, request.id, "tester", time.time()).result == ALREADY_GONE


def test_a_finding_without_a_process_cannot_become_a_kill_request(store):
    with pytest.raises(UsageError, match="names no process"):
        request_kill(store, finding_for(None, None), "tester", 1.0)  # type: ignore[arg-type]


def _ended_job_finding(store, processes) -> Finding:
    """A stored finding about a ledger job that has since ended (its process gone too)."""
    proc, me = start_tree(processes)
    job_id = insert_job(store, proc.pid, started_at=time.time(), state="done")
    proc.kill()
    proc.wait()
    with store.transaction() as conn:
        conn.execute(
            "INSERT INTO findings (key, rule, subject, severity, message, first_seen_at,"
            " last_seen_at, count, fired_at, job_id, pid, start_ticks) VALUES"
            " (?, 'output_not_growing', ?, 'warning', 'no output for 5m', 1, 1, 1, 1, ?, ?, ?)",
            (f"output_not_growing:job{job_id}", f"job #{job_id} bg1", job_id, me.pid,
             me.start_ticks),
        )
        [found] = conn.execute("SELECT id FROM findings").fetchall()
    finding = finding_by_id(store, found["id"])
    assert finding is not None
    return finding


def test_a_finding_whose_job_has_ended_cannot_become_a_kill_request(store, processes):
    finding = _ended_job_finding(store, processes)
    with pytest.raises(RefusedError, match=f"^job {finding.job_id} has ended: nothing to stop$"):
        request_kill(store, finding, "tester", 1.0)
    assert recent_kill_requests(store) == []


def test_kills_request_for_an_ended_job_exits_78_in_one_line(isolated_home, store, processes):
    finding = _ended_job_finding(store, processes)
    done = subprocess.run([SWARMDECK, "kills", "--request", str(finding.id)],
                          capture_output=True, text=True, timeout=DEADLINE)
    assert done.returncode == 78
    [line] = done.stderr.splitlines()
    assert line.endswith(f"job {finding.job_id} has ended: nothing to stop") and not done.stdout
    assert recent_kill_requests(store) == []


def _dead_job_finding(store, processes, reap: bool = True) -> Finding:
    """A stored finding about a ledger job whose row still says running while its process has
    died (reaped, or left a zombie when `reap` is false)."""
    proc, me = start_tree(processes)
    job_id = insert_job(store, proc.pid, started_at=time.time())
    proc.kill()
    if reap:
        proc.wait()
    else:
        deadline = time.monotonic() + DEADLINE
        while (stat := read_stat(proc.pid)) is not None and stat.state != "Z":
            assert time.monotonic() < deadline, "the killed process never became a zombie"
            time.sleep(0.02)
    with store.transaction() as conn:
        conn.execute(
            "INSERT INTO findings (key, rule, subject, severity, message, first_seen_at,"
            " last_seen_at, count, fired_at, job_id, pid, start_ticks) VALUES"
            " (?, 'output_not_growing', ?, 'warning', 'no output for 5m', 1, 1, 1, 1, ?, ?, ?)",
            (f"output_not_growing:job{job_id}", f"job #{job_id}", job_id, me.pid,
             me.start_ticks),
        )
        [found] = conn.execute("SELECT id FROM findings").fetchall()
    finding = finding_by_id(store, found["id"])
    assert finding is not None
    return finding


@pytest.mark.parametrize("reap", [True, False], ids=["reaped", "zombie"])
def test_a_running_rows_finding_whose_process_died_cannot_become_a_kill_request(
    store, processes, reap
):
    finding = _dead_job_finding(store, processes, reap)
    wanted = (f"^job {finding.job_id}'s process \\(pid {finding.pid}\\) has already ended,"
              " though its row still says running: nothing to stop$")
    with pytest.raises(RefusedError, match=wanted):
        request_kill(store, finding, "tester", 1.0)
    assert recent_kill_requests(store) == []


def test_kills_request_for_a_dead_process_exits_78_in_one_line(isolated_home, store, processes):
    finding = _dead_job_finding(store, processes)
    done = subprocess.run([SWARMDECK, "kills", "--request", str(finding.id)],
                          capture_output=True, text=True, timeout=DEADLINE)
    assert done.returncode == 78, done.stderr
    [line] = done.stderr.splitlines()
    assert line.endswith("has already ended, though its row still says running: nothing to stop")
    assert not done.stdout
    assert recent_kill_requests(store) == []


def test_a_finding_without_a_job_whose_process_died_cannot_become_a_kill_request(
    store, processes
):
    proc, me = start_tree(processes)
    proc.kill()
    proc.wait()
    with pytest.raises(RefusedError, match=f"^finding 1's process \\(pid {me.pid}\\) has already"
                       " ended: nothing to stop$"):
        request_kill(store, finding_for(me.pid, me.start_ticks), "tester", 1.0)
    assert recent_kill_requests(store) == []


def test_a_pid_that_names_another_process_is_still_requested_for_approval_to_refuse(
    store, processes
):
    """The recorded process is gone but its pid is taken: the request is recorded, and the
    approval's start-ticks check refuses it without a signal (PID_REUSED), not the request."""
    proc, me = start_tree(processes)
    job_id = insert_job(store, proc.pid, started_at=time.time(), start_ticks=me.start_ticks - 1)
    request = request_kill(store, finding_for(me.pid, me.start_ticks - 1, job_id), "t", 1.0)
    assert (request.pid, request.start_ticks) == (me.pid, me.start_ticks - 1)
    assert approve(store, request.id, "tester", time.time(), grace=1.0).result == PID_REUSED
    assert proc.poll() is None


def test_the_approve_command_exits_78_when_refused(isolated_home, store, processes):
    proc, me = start_tree(processes)
    request = request_kill(store, finding_for(me.pid, me.start_ticks), "tester", 1.0)
    done = subprocess.run([SWARMDECK, "approve", str(request.id)], capture_output=True,
                          text=True, timeout=DEADLINE)
    assert done.returncode == 78
    assert "not supervised" in done.stderr and "Traceback" not in done.stderr
    listed = subprocess.run([SWARMDECK, "kills"], capture_output=True, text=True,
                            timeout=DEADLINE)
    assert "refused: not supervised" in listed.stdout
    assert proc.poll() is None


# ---------------------------------------------------------------- escalation


def test_escalation_is_off_by_default_and_needs_unacknowledged_repeats():
    f = finding_for(10, 20, count=5)
    assert not escalates(f, 0)
    assert escalates(f, 5)
    assert not escalates(finding_for(10, 20, count=4), 5)
    assert not escalates(finding_for(10, 20, count=9, acknowledged_at=1.0), 5)
    assert not escalates(finding_for(None, None, count=9), 5)  # type: ignore[arg-type]


def _stalled_job(isolated_home, store, processes, own_slice) -> subprocess.Popen[str]:
    proc, _ = start_tree(processes)
    output = isolated_home / "job.out"
    output.write_text("x\n")
    then = time.time() - 600
    import os

    os.utime(output, (then, then))
    caged_job(store, own_slice, proc.pid, output_path=str(output), started_at=then)
    return proc


def test_escalation_stops_the_subject_after_n_repeats_and_raises_a_critical_alert(
    isolated_home, store, processes, own_slice
):
    config = write_watchdog_config(isolated_home, min_duration=0, output_stall=60,
                                   escalate_after=3)
    proc = _stalled_job(isolated_home, store, processes, own_slice)
    engine = Watchdog(config, store)
    for _ in range(2):
        assert engine.run_pass(take_snapshot(config, store)).escalated == []
        assert proc.poll() is None
    [line] = engine.run_pass(take_snapshot(config, store)).escalated
    assert "seen in 3 watchdog passes without acknowledgement" in line and "stopped" in line
    proc.wait(timeout=DEADLINE)
    [critical] = [a for a in open_alerts(store) if a.level == "critical"]
    assert "acted by itself" in critical.message, "one alert per escalation"


def test_without_the_policy_repeats_never_stop_anything(
    isolated_home, store, processes, own_slice
):
    config = write_watchdog_config(isolated_home, min_duration=0, output_stall=60)
    proc = _stalled_job(isolated_home, store, processes, own_slice)
    engine = Watchdog(config, store)
    for _ in range(4):
        assert engine.run_pass(take_snapshot(config, store)).escalated == []
    assert proc.poll() is None


def test_escalation_never_stops_a_rows_process_outside_its_runners_cage(
    isolated_home, store, processes, own_slice
):
    """A row any same-user process can write (a live runner, a process of its choosing, no
    cage of that runner's holding it): the escalation acts on it as approval does, refusing."""
    config = write_watchdog_config(isolated_home, min_duration=0, output_stall=60,
                                   escalate_after=1)
    proc, _ = start_tree(processes)
    output = isolated_home / "job.out"
    output.write_text("x\n")
    then = time.time() - 600
    import os

    os.utime(output, (then, then))
    insert_job(store, proc.pid, output_path=str(output), started_at=then)
    [line] = Watchdog(config, store).run_pass(take_snapshot(config, store)).escalated
    assert "not supervised" in line, line
    time.sleep(0.2)
    assert proc.poll() is None
