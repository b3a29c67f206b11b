"""A cgroup v1 slice of a test's own, for the tests outside tests/actions that start caged runs:
a run of theirs never makes or fills the machine's default slice.

The slices come from tests/actions/cagekit.py, loaded by path under its own name, so every test
of a worker shares the one module and its counter of slice names with the cage tests.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

CAGEKIT = Path(__file__).resolve().parent / "actions" / "cagekit.py"


def cagekit() -> ModuleType:
    """tests/actions/cagekit.py, imported once as `cagekit`."""
    if "cagekit" not in sys.modules:
        spec = importlib.util.spec_from_file_location("cagekit", CAGEKIT)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["cagekit"] = module
        spec.loader.exec_module(module)
    return sys.modules["cagekit"]


@contextmanager
def slice_in_config(config: Path, slice_mib: int = 256, prediction: str = "16M") -> Iterator[Path]:
    """A slice of this test's own of `slice_mib`, named in `config` (a job books `prediction`),
    removed with whatever is left in it."""
    kit = cagekit()
    path = kit.new_slice()
    try:
        kit.write_config(config, path, slice_mib * kit.MIB, default_prediction=prediction)
        yield path
    finally:
        kit.remove_tree(path)
