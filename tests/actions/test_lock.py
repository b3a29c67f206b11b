"""Workspace locks with real holder processes: take, queue, stale takeover, release."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import swarmdeck
from racers import race, start_racer
from swarmdeck.actions import lock
from swarmdeck.errors import UsageError
from swarmdeck.exitcodes import ExitCode
from swarmdeck.probes import locks
from swarmdeck.probes.procs import ProcessIdentity, identity, own_identity, read_stat
from waiting import DEADLINE, wait_for


def sleeper(**kwargs) -> subprocess.Popen[bytes]:
    return subprocess.Popen(["sleep", "60"], **kwargs)


@pytest.fixture
def holder() -> Iterator[tuple[subprocess.Popen[bytes], ProcessIdentity]]:
    proc = sleeper()
    me = identity(proc.pid)
    assert me is not None
    try:
        yield proc, me
    finally:
        proc.kill()
        proc.wait()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "checkout"
    path.mkdir()
    return path


def test_free_lock_is_taken_and_records_pid_start_session_command_since(workspace: Path) -> None:
    me = own_identity()
    before = time.time()
    got = lock.acquire(workspace, session="s1", command="make test", holder=me)
    record = json.loads(got.lock_file.read_text())
    assert record["pid"] == me.pid
    assert record["start_ticks"] == read_stat(me.pid).start_ticks
    assert record["session"] == "s1" and record["command"] == "make test"
    assert record["path"] == str(workspace.resolve())
    assert before <= record["since"] <= time.time()
    assert got.lock_file.parent == locks.locks_dir()
    assert got.took_over is None and not got.already_held


def test_lock_is_keyed_by_resolved_path(workspace: Path, tmp_path: Path) -> None:
    (tmp_path / "link").symlink_to(workspace)
    assert locks.lock_file_for(tmp_path / "link") == locks.lock_file_for(workspace)
    assert locks.lock_file_for(workspace / ".." / workspace.name) == locks.lock_file_for(workspace)


def test_a_path_not_there_yet_may_be_locked_while_its_folder_exists(tmp_path: Path) -> None:
    got = lock.acquire(tmp_path / "build", session="s1", command="make", holder=own_identity())
    assert got.holder.path == str(tmp_path / "build")


def test_a_path_whose_folder_does_not_exist_is_refused_with_251(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-folder" / "checkout"
    with pytest.raises(UsageError) as refused:
        lock.acquire(missing, session="s1", command="make", holder=own_identity())
    assert refused.value.exit_code == ExitCode.USAGE
    assert refused.value.message == (
        f"cannot lock {missing}: its folder {missing.parent} does not exist"
        " (a lock is on a workspace path: check the path)"
    )
    assert locks.all_locks() == []


def test_live_holder_refuses_another_session_with_exit_78(workspace: Path, holder) -> None:
    proc, me = holder
    lock.acquire(workspace, session="A", command="build", holder=me)
    with pytest.raises(lock.LockBusy) as refused:
        lock.acquire(workspace, session="B", command="test", holder=own_identity(), wait=False)
    assert refused.value.exit_code == ExitCode.REFUSED
    assert f"held by session A, process {proc.pid}" in refused.value.message
    assert locks.read_lock(workspace).state == locks.HELD


def test_same_session_from_another_process_queues_too(workspace: Path, holder) -> None:
    _, me = holder
    lock.acquire(workspace, session="A", command="build", holder=me)
    with pytest.raises(lock.LockBusy):
        lock.acquire(workspace, session="A", command="test", holder=own_identity(), wait=False)
    again = lock.acquire(workspace, session="A", command="build", holder=me, wait=False)
    assert again.already_held


def test_waiter_says_who_holds_it_then_takes_over_after_sigkill(workspace: Path, holder) -> None:
    proc, me = holder
    lock.acquire(workspace, session="A", command="build", holder=me)
    said: list[str] = []
    result: list[lock.Acquired] = []
    waiter = threading.Thread(
        target=lambda: result.append(
            lock.acquire(
                workspace,
                session="B",
                command="test",
                holder=own_identity(),
                poll=0.02,
                say_every=0.1,
                say=said.append,
            )
        )
    )
    waiter.start()

    def held_lines() -> list[str]:
        return [line for line in said if f"held by session A, process {proc.pid}" in line]

    # It keeps saying who holds it for as long as it waits, however slowly it is scheduled.
    wait_for(lambda: len(held_lines()) >= 2, seen=lambda: said)
    assert not result
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    waiter.join(timeout=DEADLINE)
    (got,) = result
    assert got.took_over is not None and "is gone" in got.took_over.reason
    assert any("taking over a stale lock" in line for line in said)
    assert locks.read_lock(workspace).holder.session == "B"


def test_reused_pid_with_another_start_is_stale_and_taken_over(workspace: Path, holder) -> None:
    _, live = holder
    reused = locks.LockHolder(str(workspace), live.pid, live.start_ticks - 1, "A", "old", 1.0)
    write_lock(workspace, reused.to_text())
    state = locks.read_lock(workspace)
    assert state.state == locks.STALE and "another process" in state.reason
    got = lock.acquire(workspace, session="B", command="new", holder=own_identity(), wait=False)
    assert got.took_over is not None and got.holder.session == "B"


@pytest.mark.parametrize(
    "content",
    ["", '{"pid": 12, "start_ti', "garbage\x00\x01", '{"pid": -4, "start_ticks": 1}', "[1, 2]"],
)
def test_truncated_or_garbage_lock_is_stale_with_a_warning(workspace: Path, content: str) -> None:
    write_lock(workspace, content)
    said: list[str] = []
    got = lock.acquire(
        workspace, session="B", command="t", holder=own_identity(), wait=False, say=said.append
    )
    assert got.took_over is not None and "garbage" in got.took_over.reason
    assert any("garbage" in line for line in said)


def test_holder_owned_by_another_user_is_alive_not_stale(workspace: Path) -> None:
    nobody = 65534
    proc = sleeper(user=nobody, group=nobody)
    try:
        other = identity(proc.pid)
        assert other is not None
        lock.acquire(workspace, session="N", command="sleep", holder=other)
        state = locks.read_lock(workspace)
        assert state.state == locks.HELD
        with pytest.raises(lock.LockBusy):
            lock.acquire(workspace, session="B", command="t", holder=own_identity(), wait=False)
    finally:
        proc.kill()
        proc.wait()


AS_NOBODY = textwrap.dedent(
    """
    import sys, tempfile
    from pathlib import Path
    from swarmdeck.probes import locks
    lock_file = Path(tempfile.mkdtemp()) / "w.lock"
    lock_file.write_text(sys.stdin.read())
    state = locks.read_lock_file(lock_file)
    print(state.state, state.reason, sep="|")
    """
)
needs_namespaces = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("unshare") is None or shutil.which("setpriv") is None,
    reason="mounts a private /proc with hidepid in a mount namespace (root, util-linux)",
)


@pytest.fixture(scope="module")
def package_nobody_reaches() -> Iterator[Path]:
    """A copy of the package in a folder user nobody can enter: the checkout may live where
    only root can (a clone under /root, or any folder of mode 700)."""
    folder = Path(tempfile.mkdtemp(prefix="swarmdeck-nobody-"))
    try:
        shutil.copytree(
            Path(swarmdeck.__file__).parent,
            folder / "swarmdeck",
            ignore=shutil.ignore_patterns("__pycache__"),
        )
        for path in [folder, *folder.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
        yield folder
    finally:
        shutil.rmtree(folder)


def judged_by_nobody(
    holder: locks.LockHolder, hidepid: int, package: Path
) -> tuple[str, str]:
    """How user nobody judges a lock while /proc hides other users' processes from it (in a
    mount namespace of its own, so the machine's /proc is left as it is), importing the
    package from `package`, never from the checkout."""
    inner = (
        f"mount -t proc -o hidepid={hidepid} proc /proc && exec setpriv --reuid=65534"
        f' --regid=65534 --clear-groups {sys.executable} -c "$0"'
    )
    done = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", inner, AS_NOBODY],
        input=holder.to_text(),
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
        cwd=package,
        env={**os.environ, "PYTHONPATH": str(package)},
    )
    state, reason = done.stdout.strip().split("|")
    return state, reason


@needs_namespaces
@pytest.mark.parametrize("hidepid", [1, 2])
def test_a_holder_hidden_by_proc_is_held_not_stale(
    workspace: Path, holder, hidepid: int, package_nobody_reaches: Path
) -> None:
    _, me = holder
    live = locks.LockHolder(str(workspace), me.pid, me.start_ticks, "A", "build", 1.0)
    state, reason = judged_by_nobody(live, hidepid, package_nobody_reaches)
    assert state == locks.HELD and "another user's" in reason
    gone = dead_holder(workspace)
    assert judged_by_nobody(gone, hidepid, package_nobody_reaches)[0] == locks.STALE


def test_the_held_by_line_comes_once_a_say_interval_not_on_every_poll(
    workspace: Path, holder, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, me = holder
    lock.acquire(workspace, session="A", command="build", holder=me)
    polls = 0
    real_try_take = lock._try_take

    def counted(*args, **kwargs):
        nonlocal polls
        polls += 1
        return real_try_take(*args, **kwargs)

    monkeypatch.setattr(lock, "_try_take", counted)
    said: list[str] = []
    started = time.monotonic()
    with pytest.raises(lock.LockWaitTimedOut):
        lock.acquire(
            workspace,
            session="B",
            command="t",
            holder=own_identity(),
            timeout=0.6,
            poll=0.01,
            say_every=0.2,
            say=said.append,
        )
    elapsed = time.monotonic() - started
    assert said and all("held by session A" in line for line in said)
    assert len(said) <= elapsed / 0.2 + 1 and len(said) < polls


def test_a_file_written_past_the_guard_before_the_link_is_not_overwritten(
    workspace: Path, holder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A writer that does not take the guard (an older swarmdeck, a hand) puts a lock file in
    place between the check and the link: the link fails and the caller sees that holder."""
    proc, other = holder
    theirs = locks.LockHolder(str(workspace.resolve()), other.pid, other.start_ticks, "X", "x", 1.0)
    real_link = os.link

    def link_after_a_stranger(source, target, *args, **kwargs):
        Path(target).write_text(theirs.to_text())
        return real_link(source, target, *args, **kwargs)

    monkeypatch.setattr(lock.os, "link", link_after_a_stranger)
    with pytest.raises(lock.LockBusy, match=f"held by session X, process {proc.pid}"):
        lock.acquire(workspace, session="B", command="t", holder=own_identity(), wait=False)
    assert locks.read_lock(workspace).holder == theirs


def test_waiting_past_the_timeout_exits_253(workspace: Path, holder) -> None:
    _, me = holder
    lock.acquire(workspace, session="A", command="build", holder=me)
    with pytest.raises(lock.LockWaitTimedOut) as timed_out:
        lock.acquire(
            workspace,
            session="B",
            command="t",
            holder=own_identity(),
            timeout=0.1,
            poll=0.02,
            say=lambda _: None,
        )
    assert timed_out.value.exit_code == ExitCode.TIMED_OUT


def test_release_by_another_session_is_refused_and_by_the_holder_frees_it(
    workspace: Path, holder
) -> None:
    _, me = holder
    lock.acquire(workspace, session="A", command="build", holder=me)
    with pytest.raises(lock.RefusedError):
        lock.release(workspace, session="B")
    assert locks.read_lock(workspace).state == locks.HELD
    assert lock.release(workspace, session="A").state == locks.HELD
    assert locks.read_lock(workspace).state == locks.FREE
    assert lock.release(workspace, session="A").state == locks.FREE


def dead_holder(workspace: Path) -> locks.LockHolder:
    """A holder whose process has ended and been reaped."""
    gone = subprocess.Popen(["true"])
    me = identity(gone.pid)
    gone.wait()
    ticks = me.start_ticks if me else 0
    return locks.LockHolder(str(workspace), gone.pid, ticks, "dead", "x", 1.0)


def write_lock(workspace: Path, text: str) -> Path:
    lock_file = locks.lock_file_for(workspace)
    lock_file.parent.mkdir(parents=True, exist_ok=True)
    lock_file.write_text(text)
    return lock_file


def test_anyone_may_clear_a_stale_lock(workspace: Path) -> None:
    lock_file = write_lock(workspace, dead_holder(workspace).to_text())
    assert lock.release(workspace, session="B").state == locks.STALE
    assert not lock_file.exists()


def test_a_dead_holder_cannot_take_a_lock(workspace: Path) -> None:
    with pytest.raises(lock.UsageError):
        lock.acquire(workspace, session="A", command="x", holder=ProcessIdentity(os.getpid(), 1))


def test_all_locks_lists_held_and_stale_ones(tmp_path: Path, holder) -> None:
    _, me = holder
    a, b = tmp_path / "a", tmp_path / "b"
    lock.acquire(a, session="A", command="x", holder=me)
    stale = locks.lock_file_for(b)
    stale.write_text("junk")
    states = {s.lock_file: s.state for s in locks.all_locks()}
    assert states == {locks.lock_file_for(a): locks.HELD, stale: locks.STALE}


TAKER = """
from swarmdeck.actions import lock
from swarmdeck.errors import UsageError
from swarmdeck.probes.procs import own_identity
"""
TAKE = """
try:
    lock.acquire(_sys.argv[2], session=_sys.argv[3], command="race", holder=own_identity(),
                 wait=False, say=lambda _: None)
    print("won", flush=True)
except lock.LockBusy:
    print("lost", flush=True)
_time.sleep(3.0)  # the winner holds on, so a later racer, even a starved one, meets it live
"""


def test_racers_over_one_stale_lock_leave_exactly_one_winner(workspace: Path, tmp_path) -> None:
    write_lock(workspace, dead_holder(workspace).to_text())
    outcomes = race(TAKER, TAKE, tmp_path / "go", [[str(workspace), f"r{i}"] for i in range(6)])
    assert sorted(outcomes) == ["lost"] * 5 + ["won"]


TAKE_WAITING = TAKE.replace("wait=False", "wait=True")


def test_a_takeover_waits_while_another_decision_is_in_progress(workspace: Path, tmp_path) -> None:
    stale = dead_holder(workspace).to_text()
    lock_file = write_lock(workspace, stale)
    go = tmp_path / "go"
    go.touch()
    with lock._guard(lock_file):
        racer = start_racer(TAKER, TAKE_WAITING, go, str(workspace), "late")
        time.sleep(0.8)
        assert racer.poll() is None
        assert lock_file.read_text() == stale
    assert racer.communicate(timeout=20)[0].strip() == "won"


def _guard_held_by_another_process(lock_file: Path) -> subprocess.Popen[str]:
    """A process that sits on the lock's guard, through a read-only descriptor, until killed."""
    lock_file.parent.mkdir(parents=True, exist_ok=True)
    lock_file.with_suffix(".guard").touch()
    sitter = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import fcntl, os, time
            fd = os.open({str(lock_file.with_suffix(".guard"))!r}, os.O_RDONLY)
            fcntl.flock(fd, fcntl.LOCK_EX)
            print("held", flush=True)
            time.sleep(60)
        """)],
        stdout=subprocess.PIPE, text=True,
    )
    assert sitter.stdout is not None and sitter.stdout.readline() == "held\n"
    return sitter


def test_no_wait_never_waits_on_a_guard_someone_sits_on(workspace: Path) -> None:
    sitter = _guard_held_by_another_process(locks.lock_file_for(workspace))
    try:
        start = time.monotonic()
        with pytest.raises(lock.LockBusy, match="guard"):
            lock.acquire(workspace, session="s", command="c", holder=own_identity(), wait=False)
        assert time.monotonic() - start < lock.GUARD_BRIEF + 1.0
    finally:
        sitter.kill()
        sitter.wait()


def test_release_and_timed_waits_give_up_on_a_guard_someone_sits_on(workspace: Path) -> None:
    sitter = _guard_held_by_another_process(locks.lock_file_for(workspace))
    try:
        start = time.monotonic()
        with pytest.raises(lock.LockBusy, match="guard"):
            lock.release(workspace, session="s")
        with pytest.raises(lock.LockWaitTimedOut):
            lock.acquire(workspace, session="s", command="c", holder=own_identity(), timeout=1.0)
        assert time.monotonic() - start < 2 * lock.GUARD_WAIT + 3.0
    finally:
        sitter.kill()
        sitter.wait()


def test_lock_files_are_private(workspace: Path) -> None:
    got = lock.acquire(workspace, session="s", command="c", holder=own_identity())
    assert got.lock_file.stat().st_mode & 0o777 == 0o600
    assert got.lock_file.with_suffix(".guard").stat().st_mode & 0o777 == 0o600
    assert got.lock_file.parent.stat().st_mode & 0o777 == 0o700


def test_the_holder_policy_names_the_session(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(lock.SESSION_ENV, "from-env")
    assert lock.session_name("given", 7) == "given"
    assert lock.session_name(None, 7) == "from-env"
    monkeypatch.delenv(lock.SESSION_ENV)
    assert lock.session_name(None, 7) == "pid-7"
    assert "python" in lock.holder_command(os.getpid())
    assert lock.lock_holder(os.getpid()).pid == os.getpid()
    with pytest.raises(lock.UsageError):
        lock.lock_holder(2**22 + 12345)
