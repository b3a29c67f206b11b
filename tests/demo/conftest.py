"""The demo tests cap the scene's jobs in a slice named as the tests' own slices are, so a
killed test run's leftover is swept like theirs."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest


def _cagekit():
    # cagekit lives beside the cage tests; it is loaded by path so these tests can run alone.
    path = Path(__file__).resolve().parents[1] / "actions" / "cagekit.py"
    if "cagekit" not in sys.modules:
        spec = importlib.util.spec_from_file_location("cagekit", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["cagekit"] = module
        spec.loader.exec_module(module)
    return sys.modules["cagekit"]


@pytest.fixture
def demo_slice() -> Iterator[str | None]:
    """A slice name of this test's own (None where no v1 hierarchy is writable), removed after."""
    kit = _cagekit()
    try:
        path = kit.new_slice()
    except pytest.skip.Exception:
        yield None
        return
    path.rmdir()
    try:
        yield path.name
    finally:
        kit.remove_tree(path)
