"""`swarmdeck selftest` on a real cgroup v2 kernel, at the hierarchy's root: every cell of the
cage, the peer, the locks and the kills (selftest/cells.py) applies there (the cage's cells on v2
slices, the peer's on a loopback SSH server with a v2 slice of its own), so none may be skipped,
and every one must hold.

Each cell runs in a selftest of its own, one after the other: under qemu without KVM, on two
loaded cores, three cells at once (the selftest's own pace) ran past their deadlines, twenty
runners of one cell against the processes of two others. The guards' cells read hook input and
nothing of the kernel's: the main suite runs them (here a hook overran its 4 s answer budget).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from cagekit import SWARMDECK

from swarmdeck.probes.procs import environment, pids
from swarmdeck.selftest.cells import CELLS


@pytest.mark.timeout(1800)
def test_every_selftest_cell_of_the_machine_runs_and_holds_on_cgroup_v2(
    tmp_path: Path, cgroup_root: Path
) -> None:
    results = {}
    for name in CELLS:
        done = subprocess.run(
            [SWARMDECK, "selftest", "--json", "--cell", name], capture_output=True, text=True,
            timeout=600, env={**os.environ, "TMPDIR": str(tmp_path)},
        )
        (results[name],) = json.loads(done.stdout)["cells"]
        results[name]["exit"] = done.returncode
    said = "\n".join(
        f"{name}: {cell['result']} ({cell['seconds']} s)  {cell['reason']}"
        for name, cell in results.items()
    )
    assert [cell for cell in results.values() if cell["result"] == "skip"] == [], said
    assert {(cell["result"], cell["exit"]) for cell in results.values()} == {("pass", 0)}, said
    assert list(tmp_path.glob("swarmdeck-selftest-*")) == []
    assert list(cgroup_root.glob("swarmdeck-selftest-*")) == []
    marker = f"={tmp_path}/".encode()
    assert [pid for pid in pids() if marker in environment(pid)] == []
