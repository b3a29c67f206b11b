"""Real cgroup v1 slices for cage and runner tests: unique per test, small, removed afterwards."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from cagekit import new_slice, remove_tree


@pytest.fixture
def v1_slice() -> Iterator[Path]:
    """A slice of this test's own, removed (with anything left in it) afterwards."""
    path = new_slice()
    try:
        yield path
    finally:
        remove_tree(path)
