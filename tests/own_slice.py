"""A cgroup v1 slice of a test's own, for the tests outside tests/actions that start caged runs:
a run of theirs never makes or fills the machine's default slice.

The slices come from tests/actions/cagekit.py. Importing this module (tests/conftest.py does,
before any test module) loads it by path as `cagekit`, so `from cagekit import …` anywhere in
the tests gets that one module, and one counter of slice names per worker.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

CAGEKIT = Path(__file__).resolve().parent / "actions" / "cagekit.py"

if "cagekit" not in sys.modules:
    _spec = importlib.util.spec_from_file_location("cagekit", CAGEKIT)
    assert _spec is not None and _spec.loader is not None
    sys.modules["cagekit"] = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(sys.modules["cagekit"])


@contextmanager
def slice_in_config(
    config: Path, slice_mib: int = 256, prediction: str | None = "16M"
) -> Iterator[Path]:
    """A slice of this test's own of `slice_mib`, named in `config` (a job books `prediction`,
    or the config's default when None), removed with whatever is left in it."""
    from cagekit import MIB, new_slice, remove_tree, write_config

    path = new_slice()
    try:
        memory = {} if prediction is None else {"default_prediction": prediction}
        write_config(config, path, slice_mib * MIB, **memory)
        yield path
    finally:
        remove_tree(path)
