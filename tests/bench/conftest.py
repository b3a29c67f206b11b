"""The benchmarks' own modules, imported as they import each other: from bench/ on the path."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture
def bench_module() -> Iterator[Callable[[str], ModuleType]]:
    """Import a module of bench/ by name, bench/ on the path for the test's length."""
    sys.path.insert(0, str(BENCH))
    try:
        yield importlib.import_module
    finally:
        sys.path.remove(str(BENCH))
