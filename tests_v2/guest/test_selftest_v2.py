"""`swarmdeck selftest` on a real cgroup v2 kernel, at the hierarchy's root: every cell of the
cage, the peer, the locks and the kills (selftest/cells.py) applies there (the cage's cells on v2
slices, the peer's on a loopback SSH server with a v2 slice of its own), so none may be skipped,
and every one must hold.

Each cell runs in a selftest (and a test) of its own, one after the other: under qemu without
KVM, on two loaded cores, three cells at once (the selftest's own pace) ran past their
deadlines, twenty runners of one cell against the processes of two others. The guards' cells
read hook input and nothing of the kernel's: the main suite runs them (here a hook overran its
4 s answer budget).
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

LEFT_OUT = {"admissions", "slice-full"}
"""The cells whose proof the emulated guest cannot give, each proven on v2 another way:
- admissions: twenty runners started at once, each deciding within 60 s of the last; under qemu
  without KVM on two loaded cores not one was decided in its first 60 s (98 s in all). Admission
  of twenty concurrent runs on v2 is test_run_v2.py's own test, which waits as long as it needs.
- slice-full: the holder is taken and the grower must live; under TCG the holder's memory is
  freed late and a second OOM in the slice took the grower too (1 run in the last 3), as it did
  the neighbour tests guest_tests.txt leaves out. 254 on v2 is test_cage_v2.py's slice count."""


@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", [name for name in CELLS if name not in LEFT_OUT])
def test_the_selftest_cell_runs_and_holds_on_cgroup_v2(
    name: str, tmp_path: Path, cgroup_root: Path
) -> None:
    done = subprocess.run(
        [SWARMDECK, "selftest", "--json", "--cell", name], capture_output=True, text=True,
        timeout=600, env={**os.environ, "TMPDIR": str(tmp_path)},
    )
    (cell,) = json.loads(done.stdout)["cells"]
    said = f"{name}: {cell['result']} ({cell['seconds']} s)  {cell['reason']}"
    assert cell["result"] != "skip", f"skipped, though it applies on cgroup v2: {said}"
    assert cell["result"] == "pass" and done.returncode == 0, said
    assert list(tmp_path.glob("swarmdeck-selftest-*")) == []
    assert list(cgroup_root.glob("swarmdeck-selftest-*")) == []
    marker = f"={tmp_path}/".encode()
    assert [pid for pid in pids() if marker in environment(pid)] == []
