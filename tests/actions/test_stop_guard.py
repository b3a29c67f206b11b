"""A runner SIGKILLed while it stops its job's leftovers never leaves them frozen: whoever reads
the run's output gets its end, and no process of the job stays stopped.

The moment is caught, not hoped for: one leftover is held in a v1 freezer cgroup of the test's
own, so the runner's SIGSTOP cannot take hold on it (it stays pending) and the runner waits its
whole STOP_CONFIRM (1 s) inside the freeze. Once the test sees that SIGSTOP pending, it freezes
the runner (and its guardian) in a second freezer cgroup, and decides on the frozen runner:
SIGSTOP pending on the held leftover and SIGTERM not yet sent is inside the freeze. Only then
is the runner SIGKILLed and thawed, so it dies exactly there, running nothing more. A run whose
look came too late (a loaded machine kept the test off the CPU past the runner's second) still
has its outcome asserted, and is tried again, up to ATTEMPTS runs.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from swarmdeck.probes.cgroups import cgroup_pids
from swarmdeck.probes.procs import read_stat

SWARMDECK = str(Path(sys.executable).with_name("swarmdeck"))
FREEZER = Path("/sys/fs/cgroup/freezer")
LEFTOVERS = 300
ATTEMPTS = 10
"""Runs until one catches the runner inside its freeze. Each gives the test a whole second to
look, and the decision is made on a frozen runner; only a test kept off the CPU for that second
misses, and ten misses in a row mean the freeze no longer waits for the held leftover."""
EOF_BOUND = 60.0
"""How long the caller may wait for the end of the output once the runner is killed; a frozen
tree never gives it."""
_names = itertools.count()


@contextlib.contextmanager
def freezer_cgroup() -> Iterator[Path]:
    """A v1 freezer cgroup of the test's own, thawed and removed afterwards."""
    if not os.access(FREEZER, os.W_OK):
        pytest.skip("needs a writable cgroup v1 freezer hierarchy (root on these machines)")
    path = FREEZER / f"swarmdeck-test-freeze-{os.getpid()}-{next(_names)}"
    path.mkdir()
    try:
        yield path
    finally:
        (path / "freezer.state").write_text("THAWED")
        for _ in range(250):
            for pid in cgroup_pids(path):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(OSError):
                path.rmdir()
            if not path.exists():
                break
            time.sleep(0.02)


@pytest.fixture
def freezer() -> Iterator[Path]:
    """Where the held leftover is frozen."""
    with freezer_cgroup() as path:
        yield path


@pytest.fixture
def runner_freezer() -> Iterator[Path]:
    """Where the runner (and the guardian it forks) is frozen at the moment the test decides."""
    with freezer_cgroup() as path:
        yield path


def pending(pid: int) -> set[int]:
    """The signals pending for the whole process (ShdPnd)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("ShdPnd:"):
            mask = int(line.split()[1], 16)
            return {sig for sig in range(1, 65) if mask & (1 << (sig - 1))}
    return set()


def sleeping(cage: Path) -> list[int]:
    """The job's `sleep` processes in its cage (a shell forked for one has not become it yet)."""
    return [pid for pid in cgroup_pids(cage)
            if (stat := read_stat(pid)) is not None and stat.comm == "sleep"]


def stopped(pids: list[int]) -> list[int]:
    return [pid for pid in pids if (stat := read_stat(pid)) is not None and stat.state in "Tt"]


def set_state(freezer: Path, state: str) -> None:
    """FROZEN or THAWED, waiting until the kernel says every member is."""
    (freezer / "freezer.state").write_text(state)
    deadline = time.monotonic() + 30
    while (freezer / "freezer.state").read_text().strip() != state:
        assert time.monotonic() < deadline, f"the freezer cgroup never became {state}"
        time.sleep(0.01)


def freeze(freezer: Path, pid: int) -> None:
    (freezer / "cgroup.procs").write_text(str(pid))
    set_state(freezer, "FROZEN")


def read_to_end(stream, bound: float) -> bool:
    """Read a pipe until its end; False when the end did not come within `bound` seconds."""
    deadline = time.monotonic() + bound
    fd = stream.fileno()
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        if ready and not os.read(fd, 65536):
            return True
    return False


def test_a_runner_killed_while_it_freezes_its_leftovers_leaves_nothing_frozen(
    isolated_home: Path, own_slice: Path, freezer: Path, runner_freezer: Path, tmp_path: Path
) -> None:
    hits = []
    for attempt in range(ATTEMPTS):
        hits.append(kill_the_runner_in_its_freeze(
            own_slice, freezer, runner_freezer, tmp_path / str(attempt)
        ))
        if hits[-1]:
            break
    assert any(hits), f"the runner was never caught inside its freeze in {ATTEMPTS} runs"


def kill_the_runner_in_its_freeze(
    own_slice: Path, freezer: Path, runner_freezer: Path, folder: Path
) -> bool:
    """One run: the runner frozen once it sent the held leftover its SIGSTOP, then killed; the
    output ends and nothing stays stopped (asserted whatever the moment); True when the frozen
    runner was inside its freeze."""
    folder.mkdir()
    go = folder / "go"
    os.mkfifo(go)
    script = (f"for i in $(seq {LEFTOVERS}); do sleep 1000 & done; echo spawned;"
              f" read x < {go}")
    runner = subprocess.Popen(
        [SWARMDECK, "run", "--cap", "200M", "--", "sh", "-c", script], stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, start_new_session=True,
    )
    try:
        assert runner.stdout.readline() == b"spawned\n", runner.stderr.read()
        [cage] = own_slice.glob(f"job-*-{runner.pid}")
        deadline = time.monotonic() + 60
        while len(leftovers := sleeping(cage)) < LEFTOVERS:
            assert time.monotonic() < deadline, f"only {len(leftovers)} leftovers started"
            time.sleep(0.02)
        held = leftovers[0]
        freeze(freezer, held)
        # The runner alone (its job started already): the guardian it forks joins it.
        (runner_freezer / "cgroup.procs").write_text(str(runner.pid))
        with open(go, "w") as fifo:
            fifo.write("go\n")  # the job's main process ends: the runner stops the leftovers
        deadline = time.monotonic() + 60
        while signal.SIGSTOP not in pending(held):
            assert time.monotonic() < deadline, "the runner never froze its leftovers"
            time.sleep(0.001)
        set_state(runner_freezer, "FROZEN")
        signals = pending(held)
        runner.kill()
        set_state(runner_freezer, "THAWED")
        runner.wait()
        set_state(freezer, "THAWED")
        assert read_to_end(runner.stdout, EOF_BOUND), (
            f"no end of output: {len(stopped(leftovers))} leftovers are still stopped"
        )
        assert stopped(leftovers) == []
        return signal.SIGTERM not in signals
    finally:
        if runner.poll() is None:
            runner.kill()
            (runner_freezer / "freezer.state").write_text("THAWED")
            runner.wait()
        runner.stdout.close()
        runner.stderr.close()


def guardian(said: bytes) -> subprocess.CompletedProcess[bytes]:
    """The guardian as a stopper with threads starts it, told `said`, its pipe then ended."""
    return subprocess.run(
        [sys.executable, "-m", "swarmdeck.actions.stop_guardian"], input=said, timeout=60,
        capture_output=True,
    )


def frozen_sleep() -> tuple[subprocess.Popen[bytes], bytes]:
    proc = subprocess.Popen(["sleep", "300"], start_new_session=True)
    os.kill(proc.pid, signal.SIGSTOP)
    stat = read_stat(proc.pid)
    assert stat is not None
    return proc, f"{proc.pid} {stat.start_ticks}\n".encode()


def test_the_guardian_of_a_stopper_that_died_stops_what_it_was_told_of() -> None:
    proc, line = frozen_sleep()
    try:
        assert guardian(line).returncode == 0
        assert proc.wait(timeout=60) in (-signal.SIGTERM, -signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait()


def test_the_guardian_of_a_stop_that_ended_touches_nothing() -> None:
    proc, line = frozen_sleep()
    try:
        assert guardian(line + b"done\n").returncode == 0
        assert proc.poll() is None and stopped([proc.pid]) == [proc.pid]
    finally:
        proc.kill()
        proc.wait()


def test_a_stopper_with_threads_starts_its_guardian_apart_and_reaps_it() -> None:
    """The app's approve runs in a worker thread: its guardian is a new interpreter, not a
    fork of a process with threads."""
    from swarmdeck.actions.kill import stop_tree
    from swarmdeck.probes.procs import identity

    idle = threading.Event()
    worker = threading.Thread(target=idle.wait)
    worker.start()
    children = Path(f"/proc/{os.getpid()}/task/{os.getpid()}/children")
    before = set(children.read_text().split())  # what earlier tests may have left unreaped
    proc = subprocess.Popen(["sh", "-c", "sleep 300 & wait"], start_new_session=True)
    try:
        me = identity(proc.pid)
        assert me is not None
        report = stop_tree(me, {me}, grace=1.0)
        assert me in report.signalled
        assert proc.wait(timeout=60) == -signal.SIGTERM
        assert set(children.read_text().split()) - before == set()
    finally:
        idle.set()
        worker.join()
        proc.kill()
        proc.wait()


def test_a_stop_that_fails_halfway_leaves_nothing_frozen() -> None:
    """A stopper that raises after it froze the tree (here: its cage listing fails on the
    second round) hands the stop to its guardian, as if it had died."""
    from swarmdeck.actions.kill import stop_tree
    from swarmdeck.probes.procs import identity

    proc = subprocess.Popen(["sh", "-c", "sleep 300 & wait"], start_new_session=True)
    calls = itertools.count(1)

    def members() -> list[int]:
        if next(calls) == 3:  # the own-tree check, round 1, then round 2 fails
            raise OSError("the cage's listing failed")
        return []

    try:
        deadline = time.monotonic() + 60
        while not Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split():
            assert time.monotonic() < deadline
            time.sleep(0.01)
        [child] = [int(pid) for pid in
                   Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()]
        me = identity(proc.pid)
        assert me is not None
        with pytest.raises(OSError, match="listing failed"):
            stop_tree(me, {me}, grace=1.0, members=members)
        assert proc.wait(timeout=60) in (-signal.SIGTERM, -signal.SIGKILL)
        deadline = time.monotonic() + 60
        while (stat := read_stat(child)) is not None and stat.state != "Z":
            assert stat.state not in "Tt", "the child was left frozen"
            assert time.monotonic() < deadline, "the child outlived the stop"
            time.sleep(0.01)
    finally:
        proc.kill()
        proc.wait()
