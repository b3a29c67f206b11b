"""Tree stop on real processes: every member gone, strangers and reused pids never signalled."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from swarmdeck.actions.kill import NotSupervisedError, process_table, stop_tree
from swarmdeck.probes.procs import ProcessIdentity, identity, read_stat


def spawn(script: str) -> subprocess.Popen[bytes]:
    """A shell in its own session, so its whole tree can be found by session id."""
    return subprocess.Popen(["sh", "-c", script], start_new_session=True)


def session_members(sid: int) -> list[int]:
    return [
        pid for pid, stat in process_table().items() if stat.session == sid and stat.state != "Z"
    ]


def wait_for(predicate, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(0.02)


def ident_of(proc: subprocess.Popen[bytes]) -> ProcessIdentity:
    found = identity(proc.pid)
    assert found is not None
    return found


def test_stop_tree_ends_children_and_grandchildren() -> None:
    proc = spawn("sleep 30 & (sleep 30 & sleep 30) & wait")
    wait_for(lambda: len(session_members(proc.pid)) >= 4)
    root = ident_of(proc)
    report = stop_tree(root, supervised={root}, grace=2.0)
    assert proc.wait(timeout=5) != 0
    wait_for(lambda: not session_members(proc.pid))
    assert len(report.signalled) >= 4
    assert report.survivors == []


def test_a_process_ignoring_term_is_killed_after_the_grace_period() -> None:
    code = (
        "import signal,time;signal.signal(signal.SIGTERM,signal.SIG_IGN);"
        "print(1,flush=True);time.sleep(30)"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    assert proc.stdout is not None and proc.stdout.readline()
    root = ident_of(proc)
    report = stop_tree(root, supervised={root}, grace=0.3)
    assert proc.wait(timeout=5) == -9
    assert report.killed == [root]


def test_children_born_while_freezing_are_caught() -> None:
    proc = spawn("while :; do sleep 30 & done")
    wait_for(lambda: len(session_members(proc.pid)) >= 20)
    root = ident_of(proc)
    stop_tree(root, supervised={root}, grace=2.0)
    proc.wait(timeout=5)
    wait_for(lambda: not session_members(proc.pid))


def test_a_descendant_of_a_supervised_process_may_be_stopped() -> None:
    proc = spawn("sleep 30 & sleep 31 & wait")
    wait_for(lambda: len(session_members(proc.pid)) >= 3)
    root = ident_of(proc)
    child_pid = next(pid for pid in session_members(proc.pid) if pid != proc.pid)
    child = identity(child_pid)
    assert child is not None
    stop_tree(child, supervised={root}, grace=2.0)
    wait_for(lambda: read_stat(child_pid) is None or read_stat(child_pid).state == "Z")
    assert proc.poll() is None
    stop_tree(root, supervised={root}, grace=1.0)
    proc.wait(timeout=5)


def test_a_process_outside_the_supervised_set_is_refused_and_untouched() -> None:
    stranger = subprocess.Popen(["sleep", "30"])
    try:
        with pytest.raises(NotSupervisedError):
            stop_tree(ident_of(stranger), supervised=set(), grace=0.5)
        time.sleep(0.1)
        assert stranger.poll() is None
        assert read_stat(stranger.pid).state == "S"
    finally:
        stranger.kill()
        stranger.wait()


def test_a_reused_pid_is_never_signalled() -> None:
    """The identity names the pid with other start ticks: a process that is not the one meant."""
    bystander = subprocess.Popen(["sleep", "30"])
    try:
        real = ident_of(bystander)
        remembered = ProcessIdentity(real.pid, real.start_ticks - 1)
        report = stop_tree(remembered, supervised={remembered}, grace=0.5)
        time.sleep(0.1)
        assert bystander.poll() is None
        assert report.signalled == []
    finally:
        bystander.kill()
        bystander.wait()


def test_cage_members_are_stopped_even_when_the_root_is_gone() -> None:
    orphan_maker = spawn("sleep 30 & echo $!")
    orphan_maker.wait(timeout=5)
    sid = orphan_maker.pid
    wait_for(lambda: bool(session_members(sid)))
    members = session_members(sid)
    gone_root = ProcessIdentity(orphan_maker.pid, 1)
    stop_tree(gone_root, supervised=set(), grace=1.0, members=lambda: members)
    wait_for(lambda: not session_members(sid))
    assert os.getpid() not in members
