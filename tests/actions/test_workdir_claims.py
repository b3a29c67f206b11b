"""Directory owners and cleanup, with real processes sitting in (or holding files in) them."""

from __future__ import annotations

import _heapq
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from racers import race
from swarmdeck.actions import workdir_claims
from swarmdeck.errors import RefusedError
from swarmdeck.probes import locks


@pytest.fixture
def root(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    return work


def test_claim_writes_an_owner_file_with_session_time_and_purpose(root: Path) -> None:
    before = time.time()
    owner = workdir_claims.claim_directory(
        root / "scratch", session="s1", purpose="copy for a test run"
    )
    record = json.loads((root / "scratch" / locks.OWNER_FILE).read_text())
    assert record == {
        "session": "s1",
        "created_at": owner.created_at,
        "purpose": "copy for a test run",
    }
    assert before <= owner.created_at <= time.time()
    assert workdir_claims.claim_directory(root / "scratch", session="s1", purpose="again") == owner


def test_claiming_another_sessions_directory_is_refused(root: Path) -> None:
    workdir_claims.claim_directory(root / "x", session="s1", purpose="p")
    with pytest.raises(RefusedError, match="owned by session s1"):
        workdir_claims.claim_directory(root / "x", session="s2", purpose="p")


def test_cleanup_removes_only_own_unused_directories_and_lists_the_rest(root: Path) -> None:
    for name in ("unused", "cwd", "open_file"):
        workdir_claims.claim_directory(root / name, session="me", purpose=name)
    workdir_claims.claim_directory(root / "theirs", session="other", purpose="their build")
    (root / "unowned").mkdir()
    (root / "garbage").mkdir()
    (root / "garbage" / locks.OWNER_FILE).write_text('{"session": ')
    held = root / "open_file" / "data"
    held.write_text("x")
    with held.open() as stdin:
        in_cwd = subprocess.Popen(["sleep", "60"], cwd=root / "cwd")
        with_file = subprocess.Popen(["sleep", "60"], stdin=stdin)
    try:
        report = workdir_claims.cleanup(root, session="me")
    finally:
        for proc in (in_cwd, with_file):
            proc.kill()
            proc.wait()
    assert report.removed == [root / "unused"]
    assert not (root / "unused").exists()
    kept = {k.directory.name: k.reason for k in report.kept}
    assert kept["cwd"] == f"in use by process {in_cwd.pid}"
    assert kept["open_file"] == f"in use by process {with_file.pid}"
    assert kept["theirs"] == "owned by session other (their build)"
    assert "no owner file" in kept["unowned"]
    assert "garbage" in kept["garbage"]
    assert all((root / name).exists() for name in kept)


def test_a_symlink_under_the_work_root_is_not_followed(root: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    workdir_claims.claim_directory(elsewhere, session="me", purpose="p")
    (root / "link").symlink_to(elsewhere)
    report = workdir_claims.cleanup(root, session="me")
    assert report.removed == [] and report.kept == []
    assert elsewhere.exists()


def test_processes_that_could_not_be_checked_are_reported_not_blocking(root: Path) -> None:
    workdir_claims.claim_directory(root / "x", session="me", purpose="p")
    report = workdir_claims.cleanup(root, session="me")
    assert report.removed == [root / "x"]
    try:
        os.readlink("/proc/1/cwd")
    except PermissionError:
        assert 1 in report.unchecked


def test_a_library_loaded_from_the_directory_keeps_it(root: Path, tmp_path: Path) -> None:
    """dlopen maps a shared library and closes its descriptor: only /proc/PID/maps shows it."""
    workdir_claims.claim_directory(root / "lib", session="me", purpose="built library")
    library = root / "lib" / "libthing.so"
    shutil.copyfile(_heapq.__file__, library)
    loader = subprocess.Popen(
        [sys.executable, "-c", LOADS_A_LIBRARY, str(library)],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert loader.stdout is not None and loader.stdout.readline() == "ready\n"
        fds = [
            os.readlink(f"/proc/{loader.pid}/fd/{fd}")
            for fd in os.listdir(f"/proc/{loader.pid}/fd")
        ]
        assert not any(fd.startswith(str(root)) for fd in fds)
        report = workdir_claims.cleanup(root, session="me")
    finally:
        loader.kill()
        loader.wait()
    assert report.removed == []
    assert [k.reason for k in report.kept] == [f"in use by process {loader.pid}"]


LOADS_A_LIBRARY = """
import ctypes, sys, time
ctypes.CDLL(sys.argv[1])
print("ready", flush=True)
time.sleep(60)
"""


def test_a_process_that_enters_after_the_first_scan_keeps_the_directory(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workdir_claims.claim_directory(root / "x", session="me", purpose="p")
    late: list[subprocess.Popen[bytes]] = []
    first_scan = locks.owned_directories

    def scan_then_someone_enters(work_root: Path) -> list[locks.OwnedDirectory]:
        entries = first_scan(work_root)
        late.append(subprocess.Popen(["sleep", "60"], cwd=root / "x"))
        return entries

    monkeypatch.setattr(locks, "owned_directories", scan_then_someone_enters)
    try:
        report = workdir_claims.cleanup(root, session="me")
    finally:
        for proc in late:
            proc.kill()
            proc.wait()
    assert report.removed == []
    assert [k.reason for k in report.kept] == [f"in use by process {late[0].pid}"]


def test_a_directory_that_cannot_be_removed_is_kept_with_the_reason(root: Path) -> None:
    workdir_claims.claim_directory(root / "stuck", session="me", purpose="p")
    workdir_claims.claim_directory(root / "fine", session="me", purpose="p")
    pinned = root / "stuck" / "pinned"
    pinned.write_text("x")
    if subprocess.run(["chattr", "+i", str(pinned)], capture_output=True).returncode != 0:
        pytest.skip("needs chattr +i (root, a file system with attributes)")
    try:
        report = workdir_claims.cleanup(root, session="me")
    finally:
        subprocess.run(["chattr", "-i", str(pinned)], check=True)
    assert report.removed == [root / "fine"]
    (kept,) = report.kept
    assert kept.directory == root / "stuck" and kept.reason.startswith("could not remove:")


def test_a_directory_with_a_garbage_owner_file_is_not_claimed(root: Path) -> None:
    (root / "x").mkdir()
    (root / "x" / locks.OWNER_FILE).write_text('{"session": ')
    with pytest.raises(RefusedError, match=r"owner file is garbage: .*; not claimed"):
        workdir_claims.claim_directory(root / "x", session="me", purpose="p")
    assert (root / "x" / locks.OWNER_FILE).read_text() == '{"session": '


CLAIMER = """
from swarmdeck.actions import workdir_claims
from swarmdeck.errors import RefusedError
"""
CLAIM = """
try:
    workdir_claims.claim_directory(_sys.argv[2], session=_sys.argv[3], purpose="race")
    print("won", flush=True)
except RefusedError:
    print("lost", flush=True)
"""


def test_sessions_claiming_one_directory_at_once_leave_exactly_one_owner(
    root: Path, tmp_path: Path
) -> None:
    argvs = [[str(root / "x"), f"s{i}"] for i in range(6)]
    outcomes = race(CLAIMER, CLAIM, tmp_path / "go", argvs)
    assert sorted(outcomes) == ["lost"] * 5 + ["won"]
    winner = f"s{outcomes.index('won')}"
    assert locks.read_owner(root / "x")[0].session == winner
