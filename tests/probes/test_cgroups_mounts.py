"""The mount table is parsed once and again only after a mount or an unmount, against a real
tmpfs the test mounts under its own folder."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from swarmdeck.probes.cgroups import MountWatch, read_hierarchies

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")


class CountingParse:
    """A parse that keeps each text it was given."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def __call__(self, text: str) -> str:
        self.texts.append(text)
        return text


@contextmanager
def tmpfs(where: Path) -> Iterator[Path]:
    where.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "swarmdeck-test", str(where)],
                   check=True)
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=True)


def test_an_unchanged_mount_table_is_read_once() -> None:
    parse = CountingParse()
    watch = MountWatch(parse)
    first = watch.read()
    assert all(watch.read() is first for _ in range(50))
    assert len(parse.texts) == 1


@needs_root
def test_a_mount_and_an_unmount_are_seen_at_the_next_read(tmp_path: Path) -> None:
    parse = CountingParse()
    watch = MountWatch(parse)
    point = tmp_path / "mounted"
    assert f" {point} " not in watch.read()
    with tmpfs(point):
        assert f" {point} " in watch.read()
        assert len(parse.texts) == 2
    assert f" {point} " not in watch.read()
    assert len(parse.texts) == 3


def test_the_hierarchies_name_the_memory_controller_this_machine_mounts() -> None:
    mounted = [
        line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()
        if " - cgroup " in line and "memory" in line.split(" - ")[1].split()[-1].split(",")
    ]
    found = read_hierarchies().v1_memory
    assert (str(found) in mounted) if mounted else found is None, (found, mounted)
