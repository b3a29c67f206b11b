"""Kernel files held open between refreshes: read afresh each time, never read stale, and only
as many held as the last round read."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from swarmdeck.probes import kernel_files
from swarmdeck.probes.kernel_files import (
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
    """Descriptors open now, once what earlier tests left to the collector is closed: else a
    collection in the middle of a test closes some and the count moves for no reason here."""
    gc.collect()
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


def test_without_hold_open_nothing_stays_open() -> None:
    fds = _open_fds()
    assert read_bytes("/proc/loadavg")
    assert held_count() == 0 and _open_fds() == fds


def test_a_file_longer_than_one_chunk_is_read_whole(tmp_path: Path) -> None:
    text = b"".join(b"%08d\n" % n for n in range(3 * kernel_files.CHUNK // 9 + 7))
    (tmp_path / "long").write_bytes(text)
    assert read_bytes(str(tmp_path / "long")) == text


def test_a_held_file_longer_than_one_chunk_is_read_whole(holding: None) -> None:
    """/proc/self/smaps of a Python process runs to hundreds of KiB: each pread continues where
    the last one ended, and the text ends with its last entry whole."""
    smaps = read_bytes("/proc/self/smaps")
    assert smaps is not None and len(smaps) > kernel_files.CHUNK
    assert smaps.endswith(b"\n") and smaps.count(b"\nRss:") == smaps.count(b"\nPss:")
    again = read_bytes("/proc/self/smaps")
    assert again is not None and len(again) > kernel_files.CHUNK and held_count() == 1


THREADS = """
import os, sys, threading
cage = sys.argv[1]
stop = threading.Event()
threads = [threading.Thread(target=stop.wait) for _ in range(1500)]
for thread in threads:
    thread.start()
with open(cage + "/cgroup.procs", "w") as procs:
    procs.write(str(os.getpid()))
print("in", flush=True)
sys.stdin.readline()
stop.set()
"""


@pytest.mark.parametrize("held", [False, True])
def test_a_cage_of_1500_threads_lists_every_one(
    held: bool, v1_cgroups: Callable[[], Path]
) -> None:
    """The kernel hands `tasks` over a page at a time: a reader that stopped at the first
    short read saw some 700 of these threads."""
    cage = v1_cgroups()
    child = subprocess.Popen([sys.executable, "-c", THREADS, str(cage)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE)
    try:
        assert child.stdout is not None and child.stdout.readline() == b"in\n"
        if held:
            hold_open()
        listed = read_bytes(f"{cage}/tasks")
        assert listed is not None
        assert sorted(listed.split()) == sorted((cage / "tasks").read_bytes().split())
        assert len(listed.split()) == 1501
    finally:
        stop_holding()
        child.communicate(b"\n")
