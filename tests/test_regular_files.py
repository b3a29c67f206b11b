"""Reading a file someone may have replaced, and replacing one so a reader sees old or new."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from swarmdeck.regular_files import NotRegularFile, read_regular, replace_private


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A folder holding only what each test puts there (the test's own folder has its config)."""
    made = tmp_path / "files"
    made.mkdir()
    return made


def test_a_replaced_file_is_private_and_whole(folder: Path) -> None:
    target = folder / "cache"
    target.write_bytes(b"old")
    target.chmod(0o644)
    replace_private(target, b"x" * 300_000)
    assert target.read_bytes() == b"x" * 300_000
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert sorted(p.name for p in folder.iterdir()) == ["cache"]


def test_a_failed_replace_keeps_the_old_file_and_leaves_no_temporary(folder: Path) -> None:
    target = folder / "cache"
    target.mkdir()  # a folder where the file should be: the rename fails
    with pytest.raises(OSError):
        replace_private(target, b"new")
    assert target.is_dir()
    assert sorted(p.name for p in folder.iterdir()) == ["cache"]


def test_a_link_planted_as_the_temporary_is_never_written_through(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_bytes(b"keep")
    (tmp_path / f".cache.{os.getpid()}.tmp").symlink_to(victim)
    with pytest.raises(OSError):
        replace_private(tmp_path / "cache", b"new")
    assert victim.read_bytes() == b"keep"


def test_only_a_regular_file_is_read(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(NotRegularFile):
        read_regular(fifo, 100)
