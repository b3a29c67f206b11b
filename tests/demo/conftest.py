"""The demo tests cap the scene's jobs in a slice named as the tests' own slices are, so a
killed test run's leftover is swept like theirs."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from cagekit import new_slice, remove_tree


@pytest.fixture
def demo_slice() -> Iterator[str | None]:
    """A slice name of this test's own (None where no v1 hierarchy is writable), removed after."""
    try:
        path = new_slice()
    except pytest.skip.Exception:
        yield None
        return
    path.rmdir()
    try:
        yield path.name
    finally:
        remove_tree(path)
