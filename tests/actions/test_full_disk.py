"""A full disk under the state folder: one line, the right exit code, nothing left behind.

The disk is a small tmpfs this test mounts in its own folder and unmounts afterwards; it is
filled with a plain file until the kernel says ENOSPC, the way a real disk fills up.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cagekit import SWARMDECK, write_config

MIB = 1 << 20


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m,mode=700", "tmpfs",
                              str(disk)], capture_output=True, check=False)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def fill(disk: Path) -> None:
    """Write until the disk has no byte left, then check that it says so."""
    fd = os.open(disk / "filler", os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        with contextlib.suppress(OSError):
            while True:
                os.write(fd, b"\0" * 4096)
        with pytest.raises(OSError) as caught:
            os.write(fd, b"\0")
        assert caught.value.errno == errno.ENOSPC
    finally:
        os.close(fd)


def _state(db: Path) -> str | None:
    """The first job's state, read without writing anything."""
    if not db.exists():
        return None
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        row = conn.execute("SELECT state FROM jobs WHERE id = 1").fetchone()
    except sqlite3.Error:
        return None
    finally:
        conn.close()
    return row[0] if row else None


def _env(disk: Path, config: Path) -> dict[str, str]:
    return dict(os.environ, SWARMDECK_STATE_DIR=str(disk / "state"), SWARMDECK_CONFIG=str(config))


def _one_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    return lines[0]


@pytest.mark.parametrize("detach", [False, True])
def test_a_run_on_a_full_disk_is_one_line_and_exit_251(
    small_disk: Path, isolated_home: Path, v1_slice: Path, detach: bool
) -> None:
    config = write_config(isolated_home / "config.toml", v1_slice, 100 * MIB)
    fill(small_disk)
    args = [SWARMDECK, "run", *(["--detach"] if detach else []), "--cap", "10M", "--", "true"]
    done = subprocess.run(args, capture_output=True, text=True, env=_env(small_disk, config),
                          timeout=60, check=False)
    assert done.returncode == 251
    assert "disk is full" in _one_line(done.stderr)


def test_a_disk_that_fills_during_a_job_keeps_its_exit_code(
    small_disk: Path, isolated_home: Path, v1_slice: Path, tmp_path: Path
) -> None:
    config = write_config(isolated_home / "config.toml", v1_slice, 100 * MIB)
    go = tmp_path / "go"
    runner = subprocess.Popen(
        [SWARMDECK, "run", "--cap", "10M", "--", "sh", "-c",
         f'i=0; while [ ! -e "{go}" ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done; exit 7'],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(small_disk, config),
    )
    try:
        deadline = time.monotonic() + 60
        while _state(small_disk / "state" / "state.db") != "running":
            assert time.monotonic() < deadline and runner.poll() is None
            time.sleep(0.05)
        fill(small_disk)
        go.touch()
        _, err = runner.communicate(timeout=60)
    finally:
        if runner.poll() is None:
            runner.kill()
    assert runner.returncode == 7
    assert "not recorded" in _one_line(err) and "disk is full" in err


def test_a_lock_on_a_full_disk_is_one_line_and_leaves_nothing(
    small_disk: Path, isolated_home: Path, tmp_path: Path
) -> None:
    env = _env(small_disk, isolated_home / "config.toml")
    (small_disk / "state" / "locks").mkdir(parents=True, mode=0o700)
    fill(small_disk)
    done = subprocess.run([SWARMDECK, "lock", "acquire", str(tmp_path), "--no-wait",
                           "--pid", str(os.getpid())], capture_output=True, text=True, env=env,
                          timeout=60, check=False)
    assert done.returncode == 251
    assert "No space left" in _one_line(done.stderr)
    left = sorted(path.name for path in (small_disk / "state" / "locks").iterdir())
    assert not [name for name in left if name.endswith(".tmp")], left
    assert not [name for name in left if name.endswith(".lock")], left


def test_a_hook_on_a_full_disk_names_the_cause(small_disk: Path, isolated_home: Path) -> None:
    env = _env(small_disk, isolated_home / "config.toml")
    subprocess.run([SWARMDECK, "status"], capture_output=True, env=env, timeout=60, check=True)
    fill(small_disk)
    done = subprocess.run([SWARMDECK, "hook", "stop"], input=b'{"hook_event_name": "Stop"}',
                          capture_output=True, env=env, timeout=60, check=False)
    assert done.returncode == 0 and done.stdout == b""
    note = done.stderr.decode()
    assert "not recorded" in note and "cannot rollback" not in note
    assert "full" in note or "I/O" in note
