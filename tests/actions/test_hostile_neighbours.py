"""Other local users and a clumsy setup against the runner and the state folder: private modes,
refused foreign folders, bounded lock waits, planted links, jobs that could never be admitted."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import test_runner
from cagekit import SWARMDECK, write_config
from test_runner import DEADLINE, SLICE_CAP, Start, job_state, rows, swarmdeck_run, wait_for

from swarmdeck.actions import admission
from swarmdeck.errors import StateError
from swarmdeck.exitcodes import ExitCode
from swarmdeck.paths import private_dir
from swarmdeck.state import StateStore

slice_config = test_runner.slice_config
start_run = test_runner.start_run


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_new_state_folder_and_its_files_are_private(slice_config: Path, isolated_home) -> None:
    done = swarmdeck_run("--detach", "--", "sh", "-c", "echo detached-secret-456")
    assert done.returncode == 0, done.stderr
    state = isolated_home / "state"
    wait_for(lambda: job_state(isolated_home) == "done")
    assert _mode(state) == 0o700
    for name in ("state.db", "state.db-wal", "state.db-shm", "state.db.admission"):
        assert _mode(state / name) == 0o600, name
    assert _mode(state / "jobs" / "job-1.out") == 0o600


def test_an_existing_open_state_folder_of_ones_own_is_narrowed(tmp_path: Path) -> None:
    folder = tmp_path / "state"
    folder.mkdir(mode=0o755)
    folder.chmod(0o755)
    (folder / "state.db").touch(mode=0o644)
    StateStore(folder / "state.db").close()
    assert _mode(folder) == 0o700
    assert _mode(folder / "state.db") == 0o600


def test_a_state_folder_of_another_user_is_refused_in_one_line(tmp_path: Path) -> None:
    folder = tmp_path / "theirs"
    folder.mkdir()
    os.chown(folder, 65534, 65534)
    with pytest.raises(StateError, match="belongs to uid 65534") as caught:
        private_dir(str(folder))
    assert "\n" not in caught.value.message
    env = dict(os.environ, SWARMDECK_STATE_DIR=str(folder))
    for args in (["status"], ["lock", "acquire", str(tmp_path), "--no-wait"]):
        done = subprocess.run([SWARMDECK, *args], capture_output=True, text=True, env=env,
                              timeout=DEADLINE, check=False)
        assert done.returncode == 251, (args, done.stderr)
        assert len(done.stderr.strip().splitlines()) == 1 and "uid 65534" in done.stderr


def test_a_state_folder_others_may_write_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "open"
    folder.mkdir()
    folder.chmod(0o777)
    with pytest.raises(StateError, match="written by others"):
        StateStore(folder / "state.db")
    assert not (folder / "state.db").exists()


def test_a_dangling_state_folder_link_is_one_line(tmp_path: Path) -> None:
    link = tmp_path / "state"
    link.symlink_to(tmp_path / "gone")
    env = dict(os.environ, SWARMDECK_STATE_DIR=str(link))
    done = subprocess.run([SWARMDECK, "lock", "acquire", str(tmp_path), "--no-wait"],
                          capture_output=True, text=True, env=env, timeout=DEADLINE, check=False)
    assert done.returncode == 251
    assert done.stderr.strip().splitlines() == [
        f"swarmdeck: state folder {link} links to {str(tmp_path / 'gone')!r}, which does not exist"
    ]


def _catches(pid: int, signum: int) -> bool:
    """Whether the process has a handler for `signum` (the runner's, once it is queued)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    caught = next(line for line in status.splitlines() if line.startswith("SigCgt:"))
    return bool(int(caught.split()[1], 16) >> (signum - 1) & 1)


def _sit_on(path: Path) -> subprocess.Popen[str]:
    """Another process holding an flock on `path` through a read-only descriptor."""
    sitter = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import fcntl, os, time
            fd = os.open({str(path)!r}, os.O_RDONLY | os.O_CREAT)
            fcntl.flock(fd, fcntl.LOCK_EX)
            print("held", flush=True)
            time.sleep(120)
        """)],
        stdout=subprocess.PIPE, text=True,
    )
    assert sitter.stdout is not None and sitter.stdout.readline() == "held\n"
    return sitter


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_runner_waiting_for_its_admission_turn_ends_at_once_on_a_signal(
    slice_config: Path, isolated_home, start_run: Start, signum: int
) -> None:
    StateStore(isolated_home / "state" / "state.db").close()
    sitter = _sit_on(isolated_home / "state" / "state.db.admission")
    try:
        runner = start_run("--", "true")
        wait_for(lambda: _catches(runner.pid, signal.SIGTERM) or runner.poll() is not None)
        time.sleep(0.2)
        assert runner.poll() is None
        sent = time.monotonic()
        runner.send_signal(signum)
        _, err = runner.communicate(timeout=DEADLINE)
        assert time.monotonic() - sent < 10.0
        assert runner.returncode == 128 + signum, err
        assert "stopped while waiting for its turn" in err
        assert rows(isolated_home) == []
    finally:
        sitter.kill()
        sitter.wait()


def test_the_wait_for_an_admission_turn_is_bounded(tmp_path: Path, monkeypatch) -> None:
    db = tmp_path / "state.db"
    sitter = _sit_on(Path(f"{db}.admission"))
    monkeypatch.setattr(admission, "TURN_WAIT", 0.5)
    try:
        start = time.monotonic()
        with pytest.raises(admission.NotAdmittedError, match="held by another process"), \
                admission.admission_turn(db):
            pass
        assert time.monotonic() - start < 3.0
    finally:
        sitter.kill()
        sitter.wait()


def test_a_planted_link_in_place_of_a_jobs_output_is_not_followed(
    slice_config: Path, isolated_home
) -> None:
    StateStore(isolated_home / "state" / "state.db").close()
    jobs = isolated_home / "state" / "jobs"
    jobs.mkdir()
    victim = isolated_home / "victim.txt"
    victim.write_text("keep me\n")
    (jobs / "job-1.out").symlink_to(victim)
    done = swarmdeck_run("--detach", "--", "sh", "-c", "echo planted")
    assert done.returncode == 251, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "job-1.out" in done.stderr
    assert victim.read_text() == "keep me\n"
    (row,) = rows(isolated_home)
    assert row["state"] == "done" and row["exit_code"] == 251 and row["started_at"] is None


def test_a_job_booking_the_whole_empty_slice_is_admitted(
    isolated_home: Path, v1_slice: Path
) -> None:
    write_config(isolated_home / "config.toml", v1_slice, SLICE_CAP)
    done = swarmdeck_run("--cap", f"{SLICE_CAP}", "--wait", "600", "--", "true")
    assert done.returncode == 0, done.stderr
    assert "queued" not in done.stderr


def test_a_job_that_cannot_fit_while_nothing_runs_is_refused_at_once(
    isolated_home: Path, v1_slice: Path
) -> None:
    # The slice is large, but the margin leaves the machine no room for this booking.
    write_config(isolated_home / "config.toml", v1_slice, SLICE_CAP, margin="64T")
    start = time.monotonic()
    done = swarmdeck_run("--cap", "40M", "--wait", "600", "--", "true")
    assert time.monotonic() - start < 10.0
    assert done.returncode == ExitCode.NOT_ADMITTED, done.stderr
    assert "even with no job running" in done.stderr and "queued" not in done.stderr


def test_a_runner_killed_outright_leaves_a_row_with_an_exit_code(
    slice_config: Path, isolated_home, start_run: Start
) -> None:
    from swarmdeck.actions.reconcile import reconcile
    from swarmdeck.probes.host import local_host_name

    runner = start_run("--", "sleep", "600")
    wait_for(lambda: job_state(isolated_home) == "running")
    runner.kill()
    runner.wait(timeout=DEADLINE)
    from swarmdeck.config import load_config

    reconcile(StateStore(isolated_home / "state" / "state.db"), local_host_name(),
              load_config().memory.slice)
    (row,) = rows(isolated_home)
    assert (row["state"], row["exit_code"]) == ("lost", ExitCode.LOST)
    assert row["outcome"].startswith("lost")
