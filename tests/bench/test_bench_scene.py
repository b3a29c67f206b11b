"""bench/scene.py takes down what a benchmark made: its slice, and the owner record its runners
wrote for that slice in the run folder, through the cage's own `release_claim` (as `swarmdeck
demo` does on its way out); a record of another ledger stays where it is."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

from swarmdeck.probes.slice_owner import record_path

MIB = 1 << 20


@pytest.fixture
def scene(bench_module: Callable[[str], ModuleType]) -> ModuleType:
    """bench/scene.py as a module, as the benchmarks import it."""
    return bench_module("scene")


def records(run_dir: Path) -> list[str]:
    folder = run_dir / "slices"
    return sorted(path.name for path in folder.iterdir()) if folder.exists() else []


def test_remove_slice_removes_the_owner_record_its_runners_wrote(
    isolated_home: Path, scene: ModuleType
) -> None:
    run_dir = isolated_home / "run"
    slice_path = scene.make_slice("bench-scene-test")
    home = None
    try:
        (isolated_home / "bench").mkdir()
        home = scene.scratch_home(isolated_home / "bench", slice_path, slice_cap=256 * MIB)
        done = subprocess.run(
            [scene.SWARMDECK, "run", "--cap", "16M", "--", "true"],
            env=home.env, capture_output=True, text=True, timeout=120,
        )
        assert done.returncode == 0, done.stderr
        ours = Path(record_path(slice_path)).name
        assert ours in records(run_dir)
        # Another ledger's record of another slice, gone too: not the benchmark's to remove.
        other = Path(record_path("/sys/fs/cgroup/memory/swarmdeck-someone-else"))
        other.write_text(json.dumps({
            "slice": "/sys/fs/cgroup/memory/swarmdeck-someone-else",
            "ledger": str(isolated_home / "someone" / "state.db"), "config": "",
            "cap": 64 * MIB, "set_at": 1.0,
        }))
    finally:
        scene.remove_slice(slice_path, [home.db] if home is not None else [])
    assert not slice_path.exists()
    assert records(run_dir) == [other.name], records(run_dir)
