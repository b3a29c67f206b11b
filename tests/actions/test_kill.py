"""Tree stop on real processes: every member gone, strangers and reused pids never signalled."""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator

import pytest
from cagekit import end_session, session_processes

from swarmdeck.actions.kill import (
    NotSupervisedError,
    PinnedProcess,
    process_table,
    stop_tree,
    tree_of,
)
from swarmdeck.probes.procs import ProcessIdentity, identity, read_stat
from waiting import wait_for

Spawn = Callable[[str], subprocess.Popen[bytes]]


@pytest.fixture
def spawn() -> Iterator[Spawn]:
    """Start a shell in its own session, so its whole tree can be found by session id; whatever
    is left of every such tree is killed after the test, passed or failed."""
    started: list[subprocess.Popen[bytes]] = []

    def start(script: str) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(["sh", "-c", script], start_new_session=True)
        started.append(proc)
        return proc

    yield start
    for proc in started:
        end_session(proc.pid)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=30)


@pytest.fixture
def stranger() -> Iterator[subprocess.Popen[bytes]]:
    """A process no one supervises, killed after the test."""
    proc = subprocess.Popen(["sleep", "60"])
    yield proc
    proc.kill()
    proc.wait()


def ident_of(proc: subprocess.Popen[bytes]) -> ProcessIdentity:
    found = identity(proc.pid)
    assert found is not None
    return found


def test_stop_tree_ends_children_and_grandchildren(spawn: Spawn) -> None:
    proc = spawn("sleep 60 & (sleep 60 & sleep 60) & wait")
    wait_for(lambda: len(session_processes(proc.pid)) >= 4)
    root = ident_of(proc)
    report = stop_tree(root, supervised={root}, grace=2.0)
    assert proc.wait(timeout=30) != 0
    wait_for(lambda: not session_processes(proc.pid))
    assert len(report.signalled) >= 4
    assert report.survivors == []


def test_a_process_ignoring_term_is_killed_after_the_grace_period() -> None:
    code = (
        "import signal,time;signal.signal(signal.SIGTERM,signal.SIG_IGN);"
        "print(1,flush=True);time.sleep(60)"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    try:
        assert proc.stdout is not None and proc.stdout.readline()
        root = ident_of(proc)
        report = stop_tree(root, supervised={root}, grace=0.3)
        assert proc.wait(timeout=30) == -9
        assert report.killed == [root]
    finally:
        proc.kill()
        proc.communicate()


def test_children_born_while_freezing_are_caught(spawn: Spawn) -> None:
    proc = spawn("while :; do sleep 60 & done")
    wait_for(lambda: len(session_processes(proc.pid)) >= 20)
    root = ident_of(proc)
    stop_tree(root, supervised={root}, grace=2.0)
    proc.wait(timeout=30)
    wait_for(lambda: not session_processes(proc.pid))


def test_a_descendant_of_a_supervised_process_may_be_stopped(spawn: Spawn) -> None:
    proc = spawn("sleep 60 & sleep 61 & wait")
    wait_for(lambda: len(session_processes(proc.pid)) >= 3)
    root = ident_of(proc)
    child_pid = next(pid for pid in session_processes(proc.pid) if pid != proc.pid)
    child = identity(child_pid)
    assert child is not None
    stop_tree(child, supervised={root}, grace=2.0)
    wait_for(lambda: read_stat(child_pid) is None or read_stat(child_pid).state == "Z")
    assert proc.poll() is None
    stop_tree(root, supervised={root}, grace=1.0)
    proc.wait(timeout=30)


def untouched(proc: subprocess.Popen[bytes]) -> bool:
    """Alive and not stopped: no signal of a tree stop ever reached it."""
    stat = read_stat(proc.pid)
    return proc.poll() is None and stat is not None and stat.state not in "TtZ"


def test_a_process_outside_the_supervised_set_is_refused_and_untouched(
    stranger: subprocess.Popen[bytes],
) -> None:
    with pytest.raises(NotSupervisedError):
        stop_tree(ident_of(stranger), supervised=set(), grace=0.5)
    time.sleep(0.1)
    assert untouched(stranger)


def test_a_reused_pid_is_never_signalled(stranger: subprocess.Popen[bytes]) -> None:
    """The identity names the pid with other start ticks: a process that is not the one meant."""
    real = ident_of(stranger)
    remembered = ProcessIdentity(real.pid, real.start_ticks - 1)
    assert tree_of([remembered], process_table()) == []
    report = stop_tree(remembered, supervised={remembered}, grace=0.5)
    time.sleep(0.1)
    assert untouched(stranger)
    assert report.signalled == []


def test_a_pinned_process_with_other_start_ticks_is_never_signalled(
    stranger: subprocess.Popen[bytes],
) -> None:
    """The pid was listed with other ticks and is someone else's by the time it is held."""
    real = ident_of(stranger)
    pinned = PinnedProcess(ProcessIdentity(real.pid, real.start_ticks + 1))
    try:
        assert not pinned.send(signal.SIGSTOP)
        assert pinned.exited()
    finally:
        pinned.close()
    time.sleep(0.1)
    assert untouched(stranger)
    held = PinnedProcess(real)
    try:
        assert held.send(0) and not held.exited()
    finally:
        held.close()


def test_a_tree_is_stopped_while_descriptors_are_numbered_past_1024(spawn: Spawn) -> None:
    """A big tree pins a pidfd per process; those above 1023 must still be waited on."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1200:
        pytest.skip("needs room for 1200 open files")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 1200), hard))
    null = os.open(os.devnull, os.O_RDONLY)
    filler = [os.dup(null) for _ in range(1100)]
    try:
        proc = spawn("sleep 60 & sleep 60 & wait")
        wait_for(lambda: len(session_processes(proc.pid)) >= 3)
        root = ident_of(proc)
        report = stop_tree(root, supervised={root}, grace=2.0)
        assert proc.wait(timeout=30) != 0
        assert len(report.signalled) == 3 and report.survivors == []
    finally:
        for fd in [*filler, null]:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_cage_members_are_stopped_even_when_the_root_is_gone(spawn: Spawn) -> None:
    orphan_maker = spawn("sleep 60 & echo $!")
    orphan_maker.wait(timeout=30)
    sid = orphan_maker.pid
    wait_for(lambda: bool(session_processes(sid)))
    members = session_processes(sid)
    gone_root = ProcessIdentity(orphan_maker.pid, 1)
    stop_tree(gone_root, supervised=set(), grace=1.0, members=lambda: members)
    wait_for(lambda: not session_processes(sid))
    assert os.getpid() not in members
