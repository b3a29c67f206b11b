"""`swarmdeck selftest` on a real cgroup v2 kernel, at the hierarchy's root: every cell of the
cage, the peer, the locks and the kills (selftest/cells.py) applies there (the cage's cells on v2
slices, the peer's on a loopback SSH server with a v2 slice of its own), so none may be skipped,
and every one must hold. The guards' cells (guard_cells.py) read hook input and nothing of the
kernel's: the main suite runs them; under qemu without KVM a hook overruns its answer budget."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from cagekit import SWARMDECK

from swarmdeck.probes.procs import environment, pids
from swarmdeck.selftest.cells import CELLS


@pytest.mark.timeout(1200)
def test_every_selftest_cell_of_the_machine_runs_and_holds_on_cgroup_v2(
    tmp_path: Path, cgroup_root: Path
) -> None:
    chosen = [arg for name in CELLS for arg in ("--cell", name)]
    done = subprocess.run(
        [SWARMDECK, "selftest", "--json", *chosen], capture_output=True, text=True,
        timeout=1200, env={**os.environ, "TMPDIR": str(tmp_path)},
    )
    report = json.loads(done.stdout)
    results = {cell["cell"]: cell for cell in report["cells"]}
    assert list(results) == list(CELLS)
    said = "\n".join(f"{name}: {cell['result']}  {cell['reason']}" for name, cell in results.items()
                     )
    assert [cell for cell in results.values() if cell["result"] == "skip"] == [], said
    assert report["ok"] and done.returncode == 0, said + "\n" + done.stderr[-2000:]
    assert list(tmp_path.glob("swarmdeck-selftest-*")) == []
    assert list(cgroup_root.glob("swarmdeck-selftest-*")) == []
    marker = f"={tmp_path}/".encode()
    assert [pid for pid in pids() if marker in environment(pid)] == []
