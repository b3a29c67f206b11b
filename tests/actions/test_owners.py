"""Directory owners and cleanup, with real processes sitting in (or holding files in) them."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from swarmdeck.actions import owners
from swarmdeck.errors import RefusedError
from swarmdeck.probes import locks


@pytest.fixture
def root(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    return work


def test_claim_writes_an_owner_file_with_session_time_and_purpose(root: Path) -> None:
    before = time.time()
    owner = owners.claim_directory(root / "scratch", session="s1", purpose="copy for a test run")
    record = json.loads((root / "scratch" / locks.OWNER_FILE).read_text())
    assert record == {
        "session": "s1",
        "created_at": owner.created_at,
        "purpose": "copy for a test run",
    }
    assert before <= owner.created_at <= time.time()
    assert owners.claim_directory(root / "scratch", session="s1", purpose="again") == owner


def test_claiming_another_sessions_directory_is_refused(root: Path) -> None:
    owners.claim_directory(root / "x", session="s1", purpose="p")
    with pytest.raises(RefusedError, match="owned by session s1"):
        owners.claim_directory(root / "x", session="s2", purpose="p")


def test_cleanup_removes_only_own_unused_directories_and_lists_the_rest(root: Path) -> None:
    for name in ("unused", "cwd", "open_file"):
        owners.claim_directory(root / name, session="me", purpose=name)
    owners.claim_directory(root / "theirs", session="other", purpose="their build")
    (root / "unowned").mkdir()
    (root / "garbage").mkdir()
    (root / "garbage" / locks.OWNER_FILE).write_text('{"session": ')
    held = root / "open_file" / "data"
    held.write_text("x")
    with held.open() as stdin:
        in_cwd = subprocess.Popen(["sleep", "60"], cwd=root / "cwd")
        with_file = subprocess.Popen(["sleep", "60"], stdin=stdin)
    try:
        report = owners.cleanup(root, session="me")
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
    owners.claim_directory(elsewhere, session="me", purpose="p")
    (root / "link").symlink_to(elsewhere)
    assert owners.cleanup(root, session="me").removed == []
    assert elsewhere.exists()


def test_processes_that_could_not_be_checked_are_reported_not_blocking(root: Path) -> None:
    owners.claim_directory(root / "x", session="me", purpose="p")
    report = owners.cleanup(root, session="me")
    assert report.removed == [root / "x"]
    try:
        os.readlink("/proc/1/cwd")
    except PermissionError:
        assert 1 in report.unchecked
