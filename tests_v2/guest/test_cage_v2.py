"""The v2 cage on a real cgroup v2 kernel: its files, its OOM evidence, and whole-job kills.

The main suite runs these decisions on cgroup v1 and feeds v2_evidence made-up counts; here the
kernel writes memory.events.local itself, so 250 against 254 is read from what it really counts.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from cagekit import MIB, hog

from swarmdeck.actions.cage import Cage, open_backend
from swarmdeck.actions.cage.v2 import V2Backend
from swarmdeck.actions.oom import OomVerdict, classify_oom
from swarmdeck.probes.cgroups import V2, read_keyed, slice_sites

DEADLINE = 60.0


def pid_cgroup(pid: int) -> str:
    """A process's cgroup v2 path, as its /proc/PID/cgroup `0::` line names it."""
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        if line.startswith("0::"):
            return line[3:]
    raise AssertionError(f"process {pid} has no cgroup v2 line")


def v2_backend(slice_path: Path, slice_cap: int = 100 * MIB) -> V2Backend:
    backend = open_backend(str(slice_path))
    assert isinstance(backend, V2Backend), backend
    backend.prepare_slice(slice_cap)
    return backend


def start_caged(cage: Cage, argv: list[str]) -> subprocess.Popen[str]:
    cage.before_start()
    return subprocess.Popen(argv, preexec_fn=cage.join, stdout=subprocess.PIPE, text=True)


def test_this_host_is_cgroup_v2_and_v2_is_chosen_at_the_hierarchy_root() -> None:
    v2, v1, scope = slice_sites("")
    assert v2.backend == V2 and v2.available, v2.reason
    assert v2.placement == "hierarchy root" and v2.path == "/sys/fs/cgroup/swarmdeck"
    assert not v1.available and "no cgroup v1 memory hierarchy" in v1.reason
    assert not scope.available


def test_a_cage_is_capped_without_swap_and_killed_as_a_whole(v2_slice: Path) -> None:
    backend = v2_backend(v2_slice)
    assert (v2_slice / "memory.max").read_text() == f"{100 * MIB}\n"
    assert (v2_slice / "memory.swap.max").read_text() == "0\n"
    assert "memory" in (v2_slice / "cgroup.subtree_control").read_text().split()
    cage = backend.create_cage(1, 30 * MIB)
    job = Path(cage.path)
    assert job.parent == v2_slice
    assert (job / "memory.max").read_text() == f"{30 * MIB}\n"
    assert (job / "memory.swap.max").read_text() == "0\n"
    assert (job / "memory.oom.group").read_text() == "1\n"
    cage.remove()
    assert not job.exists()


def test_the_job_is_in_its_cage_before_it_runs(v2_slice: Path) -> None:
    cage = v2_backend(v2_slice).create_cage(1, 30 * MIB)
    proc = start_caged(cage, ["cat", "/proc/self/cgroup"])
    out, _ = proc.communicate(timeout=DEADLINE)
    assert out.strip() == "0::" + cage.path.removeprefix("/sys/fs/cgroup")
    cage.remove()


def test_own_cap_is_read_from_the_jobs_local_oom_count(v2_slice: Path) -> None:
    cage = v2_backend(v2_slice).create_cage(1, 30 * MIB)
    proc = start_caged(cage, hog(40))
    proc.communicate(timeout=DEADLINE)
    assert proc.returncode == -9
    local = read_keyed(f"{cage.path}/memory.events.local")
    assert local["oom"] >= 1 and local["oom_kill"] >= 1
    assert cage.lost_process()
    evidence = cage.evidence()
    assert evidence.own_cap_ooms >= 1 and evidence.slice_ooms == 0
    assert classify_oom(evidence) == OomVerdict.OWN_CAP
    cage.remove()


def test_a_full_slice_is_read_from_the_slices_local_oom_count(
    v2_slice: Path, tmp_path: Path
) -> None:
    """Two jobs of 80M caps under a 100M slice: the holder takes 70M, then the grower asks for
    50M; the slice fills and the kernel takes the bigger one, the holder, whole. Under TCG the
    holder's memory is sometimes freed so late that a second OOM takes the grower too: then it
    was the slice as well, never its own cap."""
    backend = v2_backend(v2_slice)
    holder_cage, grower_cage = backend.create_cage(1, 80 * MIB), backend.create_cage(2, 80 * MIB)
    grow = tmp_path / "grow"
    holder = start_caged(holder_cage, hog(70, hold=600))
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    grower = start_caged(grower_cage, hog(50, after=grow))
    grow.touch()
    grower.communicate(timeout=DEADLINE)
    holder.communicate(timeout=DEADLINE)
    assert holder.returncode == -9 and grower.returncode in (0, -9)
    assert read_keyed(f"{v2_slice}/memory.events.local")["oom"] >= 1
    assert read_keyed(f"{holder_cage.path}/memory.events.local").get("oom", 0) == 0
    victim = holder_cage.evidence()
    assert victim.slice_ooms >= 1 and victim.own_cap_ooms == 0
    assert classify_oom(victim) == OomVerdict.SLICE_FULL
    spared = grower.returncode == 0
    assert classify_oom(grower_cage.evidence()) == (
        OomVerdict.NONE if spared else OomVerdict.SLICE_FULL
    )
    holder_cage.remove()
    grower_cage.remove()


def test_the_peak_and_working_set_are_read_from_memory_peak(v2_slice: Path) -> None:
    cage = v2_backend(v2_slice).create_cage(1, 60 * MIB)
    proc = start_caged(cage, hog(20, hold=600))
    assert proc.stdout is not None and proc.stdout.readline() == "held\n"
    reading = cage.reading()
    proc.kill()
    proc.wait()
    assert reading is not None and reading.peak is not None
    assert 20 * MIB <= reading.working_set <= reading.usage <= reading.peak <= 60 * MIB
    cage.remove()


def test_a_process_that_leaves_its_cage_is_not_a_member(v2_slice: Path, tmp_path: Path) -> None:
    cage = v2_backend(v2_slice).create_cage(1, 60 * MIB)
    elsewhere = v2_slice / "elsewhere"
    elsewhere.mkdir()
    leave = f"echo $$ > {elsewhere}/cgroup.procs; echo left; exec sleep 600"
    proc = start_caged(cage, ["sh", "-c", f"sh -c '{leave}' & sleep 600"])
    assert proc.stdout is not None and proc.stdout.readline() == "left\n"
    members = cage.members()
    (leaver,) = [int(p) for p in (elsewhere / "cgroup.procs").read_text().split()]
    proc.kill()
    proc.wait()
    assert pid_cgroup(leaver).endswith("/elsewhere")
    assert proc.pid in members and leaver not in members
