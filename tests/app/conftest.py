"""What the control room's tests share: a memory slice of their own for the jobs they start."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from actions.cagekit import new_slice, remove_tree, write_config

MIB = 1 << 20


@pytest.fixture
def caged(isolated_home: Path) -> Iterator[Path]:
    """A memory slice of this test's own, 256M, in the config the app and its runners read."""
    path = new_slice()
    try:
        write_config(isolated_home / "config.toml", path, 256 * MIB)
        yield path
    finally:
        remove_tree(path)
