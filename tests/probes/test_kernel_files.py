"""Kernel files held open between refreshes: read afresh each time, never read stale, and only
as many held as the last round read."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from swarmdeck.probes import kernel_files
from swarmdeck.probes.kernel_files import (
    MAX_HELD,
    held_count,
    hold_open,
    read_bytes,
    release_unread,
    stop_holding,
)


@pytest.fixture
def holding() -> Iterator[None]:
    hold_open()
    try:
        yield
    finally:
        stop_holding()


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def _sleeper() -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                            stdin=subprocess.PIPE)


def _limit_read_after_setting(cage: Path, mib: int) -> bytes | None:
    """Set the cage's memory limit to `mib` MiB, then read its file back through read_bytes."""
    (cage / "memory.limit_in_bytes").write_text(str(mib << 20))
    return read_bytes(f"{cage}/memory.limit_in_bytes")


def test_a_held_file_is_generated_afresh_at_each_read(
    holding: None, v1_cgroups: Callable[[], Path]
) -> None:
    cage = v1_cgroups()
    assert _limit_read_after_setting(cage, 64) == f"{64 << 20}\n".encode()
    assert held_count() == 1
    assert _limit_read_after_setting(cage, 32) == f"{32 << 20}\n".encode()
    assert held_count() == 1


def test_a_removed_cgroup_made_again_at_its_path_is_read_as_the_new_one(
    holding: None, v1_cgroups: Callable[[], Path]
) -> None:
    cage = v1_cgroups()
    assert _limit_read_after_setting(cage, 64) == f"{64 << 20}\n".encode()
    cage.rmdir()
    assert read_bytes(f"{cage}/memory.limit_in_bytes") is None
    cage.mkdir()
    assert _limit_read_after_setting(cage, 16) == f"{16 << 20}\n".encode()


def test_an_ended_process_reads_as_gone_and_its_file_is_let_go(holding: None) -> None:
    child = _sleeper()
    stat = f"/proc/{child.pid}/stat"
    assert read_bytes(stat).startswith(f"{child.pid} (".encode())
    before = held_count()
    child.communicate(b"")
    assert read_bytes(stat) is None
    assert held_count() == before - 1


def test_a_round_releases_what_it_did_not_read(holding: None) -> None:
    children = [_sleeper() for _ in range(3)]
    try:
        fds = _open_fds()
        for child in children:
            read_bytes(f"/proc/{child.pid}/stat")
        release_unread()
        assert held_count() == 3 and _open_fds() == fds + 3
        read_bytes(f"/proc/{children[0].pid}/stat")
        release_unread()
        assert held_count() == 1 and _open_fds() == fds + 1
        release_unread()
        assert held_count() == 0 and _open_fds() == fds
    finally:
        for child in children:
            child.communicate(b"")


def test_files_outside_the_kernels_trees_are_opened_for_each_read(
    holding: None, tmp_path: Path
) -> None:
    stand_in = tmp_path / "stat"
    stand_in.write_text("1 (first)")
    assert read_bytes(str(stand_in)) == b"1 (first)"
    replacement = tmp_path / "stat.new"
    replacement.write_text("1 (second)")
    replacement.replace(stand_in)
    assert read_bytes(str(stand_in)) == b"1 (second)"
    assert held_count() == 0


def test_no_more_than_max_held_are_held(holding: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kernel_files, "MAX_HELD", 2)
    fds = _open_fds()
    for name in ("loadavg", "meminfo", "uptime", "version"):
        assert read_bytes(f"/proc/{name}")
    assert held_count() == 2 and _open_fds() == fds + 2
    assert MAX_HELD > 2


def test_without_hold_open_nothing_stays_open() -> None:
    fds = _open_fds()
    assert read_bytes("/proc/loadavg")
    assert held_count() == 0 and _open_fds() == fds
