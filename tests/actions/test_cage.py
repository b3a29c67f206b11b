"""Cage backends: detection on this machine, real v1 cages, and the v2/scope decisions."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cagekit import MIB, hog

from swarmdeck.actions.cage import CageError, open_backend
from swarmdeck.actions.cage.scope import ScopeCage, scope_command
from swarmdeck.actions.cage.v1 import V1Backend
from swarmdeck.actions.cage.v2 import V2Cage, v2_evidence
from swarmdeck.actions.oom import OomVerdict, classify_oom
from swarmdeck.probes import cgroups
from swarmdeck.probes.cgroups import (
    V1,
    V2,
    Hierarchies,
    OwnCgroups,
    SliceSite,
    parse_mountinfo,
    parse_proc_cgroup,
    read_memory,
    scope_site,
    scope_slice_path,
    slice_sites,
    v2_parent_verdict,
    v2_site,
)

MOUNTINFO = """\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
37 31 0:34 / /sys/fs/cgroup/freezer rw,relatime - cgroup cgroup rw,freezer
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
"""
PROC_CGROUP = "9:name=systemd:/\n4:memory:/process_api/4216cf\n1:cpu:/\n0::/\n"


def v1_backend(slice_path: Path) -> V1Backend:
    return V1Backend(SliceSite(V1, True, "", slice_path, "configured"))


@pytest.fixture
def backend(v1_slice: Path) -> V1Backend:
    """A v1 backend on this test's own slice, capped at 100M."""
    made = v1_backend(v1_slice)
    made.prepare_slice(100 * MIB)
    return made


def run_caged(backend: V1Backend, job_id: int, cap: int, argv: list[str]):
    cage = backend.create_cage(job_id, cap)
    cage.before_start()
    proc = subprocess.Popen(argv, preexec_fn=cage.join, stdout=subprocess.PIPE)
    return cage, proc


def test_mountinfo_names_the_v1_memory_and_cgroup2_mounts() -> None:
    hier = parse_mountinfo(MOUNTINFO)
    assert hier == Hierarchies("/sys/fs/cgroup/memory", "/sys/fs/cgroup/unified")


def test_proc_cgroup_gives_the_memory_and_unified_paths() -> None:
    assert parse_proc_cgroup(PROC_CGROUP) == OwnCgroups("/process_api/4216cf", "/")


def test_on_this_machine_v2_is_unavailable_with_a_reason_and_v1_is_chosen() -> None:
    v2, v1, scope = slice_sites("")
    assert v2.backend == V2 and not v2.available
    assert "no memory controller" in v2.reason
    assert v1.available and v1.placement == "hierarchy root"
    assert v1.path is not None and Path(v1.path).name == "swarmdeck"
    assert not scope.available and "systemd is not PID 1" in scope.reason
    backend = open_backend("")
    assert backend.kind == "cgroup-v1"
    assert backend.site.placement == "hierarchy root"


def test_a_configured_slice_is_used_as_given(v1_slice: Path) -> None:
    backend = open_backend(str(v1_slice))
    assert backend.slice_path == str(v1_slice)
    assert open_backend(v1_slice.name).slice_path == str(v1_slice)


def test_no_usable_backend_is_one_line_exit_251(tmp_path: Path) -> None:
    with pytest.raises(CageError) as caught:
        open_backend(str(tmp_path / "nowhere" / "slice"))
    assert caught.value.exit_code == 251
    message = caught.value.message
    assert "\n" not in message
    assert "cgroup-v1" in message and "cgroup-v2" in message and "systemd-scope" in message


def test_v2_parent_rules() -> None:
    assert v2_parent_verdict({"memory"}, {"memory"}, True, True) == ""
    assert v2_parent_verdict({"memory"}, set(), False, True) == ""
    assert "no memory controller" in v2_parent_verdict({"hugetlb"}, set(), False, True)
    assert "not writable" in v2_parent_verdict({"memory"}, {"memory"}, False, False)
    assert "holds processes" in v2_parent_verdict({"memory"}, set(), True, True)


def test_v2_site_without_a_cgroup2_mount_says_so() -> None:
    site = v2_site("", Hierarchies(Path("/sys/fs/cgroup/memory"), None), OwnCgroups(None, None))
    assert not site.available and "no cgroup2" in site.reason


def test_v2_own_cap_reads_from_the_jobs_local_oom_count() -> None:
    evidence = v2_evidence(
        job_events={"oom": 1, "oom_kill": 1},
        job_events_local={"oom": 1, "oom_kill": 1, "max": 40},
        slice_local_before={"oom": 3, "max": 7},
        slice_local_after={"oom": 3, "max": 7},
        job_peak=100 * MIB,
        job_cap=100 * MIB,
    )
    assert classify_oom(evidence) is OomVerdict.OWN_CAP


def test_v2_slice_full_reads_from_the_slices_local_oom_count() -> None:
    evidence = v2_evidence(
        job_events={"oom_kill": 1, "oom_group_kill": 1},
        job_events_local={"oom_kill": 1},
        slice_local_before={"oom": 3, "max": 7},
        slice_local_after={"oom": 4, "max": 9},
        job_peak=60 * MIB,
        job_cap=100 * MIB,
    )
    assert evidence.slice_ooms == 1 and evidence.own_cap_ooms == 0
    assert classify_oom(evidence) is OomVerdict.SLICE_FULL


def test_a_gone_scope_killed_at_its_own_cap_is_told_by_its_slices_subtree_count() -> None:
    """systemd removed the scope before the runner read any count after the kill (reads of a
    removed cgroup's files fail): the slice's hierarchical memory.events counted an OOM below
    it while its own limit counted none, so the SIGKILLed job's was at its own cap (the
    systemd guest's user job once ended a bare 137 this way)."""
    evidence = v2_evidence(
        job_events={"oom": 0, "oom_kill": 0}, job_events_local={"oom": 0, "max": 0},
        slice_local_before={"oom": 3}, slice_local_after={"oom": 3},
        job_peak=None, job_cap=30 * MIB, cgroup_gone=True,
        slice_tree_before={"oom": 5, "oom_kill": 5}, slice_tree_after={"oom": 6, "oom_kill": 6},
    )
    assert classify_oom(evidence) is OomVerdict.OWN_CAP


def test_a_gone_scope_is_no_oom_when_nothing_below_the_slice_was_killed() -> None:
    evidence = v2_evidence(
        job_events={}, job_events_local={},
        slice_local_before={"oom": 3}, slice_local_after={"oom": 3},
        job_peak=None, job_cap=30 * MIB, cgroup_gone=True,
        slice_tree_before={"oom": 5, "oom_kill": 5}, slice_tree_after={"oom": 5, "oom_kill": 5},
    )
    assert classify_oom(evidence) is OomVerdict.NONE


def test_v2_no_kill_in_the_job_is_no_verdict_even_when_the_slice_had_one() -> None:
    evidence = v2_evidence({}, {}, {"oom": 0}, {"oom": 2}, 10 * MIB, 100 * MIB)
    assert classify_oom(evidence) is OomVerdict.NONE


def test_systemd_slices_nest_by_dash() -> None:
    root = "/sys/fs/cgroup"
    assert scope_slice_path("swarmdeck.slice", root) == f"{root}/swarmdeck.slice"
    assert scope_slice_path("a-b.slice", root) == f"{root}/a.slice/a-b.slice"


def test_scope_command_caps_the_scope_and_passes_argv_untouched() -> None:
    line = scope_command(["make", "-j", "a b"], "swarmdeck-job-1", "swarmdeck.slice", 5 * MIB)
    assert line[0] == "systemd-run" and "--scope" in line
    assert f"MemoryMax={5 * MIB}" in line and "MemorySwapMax=0" in line
    assert line[line.index("--") + 1 :][-3:] == ["make", "-j", "a b"]


def test_a_scoped_job_waits_at_the_gate_until_its_runner_has_armed_the_cage(
    tmp_path: Path,
) -> None:
    """systemd removes a scope as soon as its last process is gone, so a job killed at its cap
    before the runner opened memory.events would end as a bare 137 (found on the systemd
    guest). Inside the scope the job first stops itself; the runner arms the cage, then lets it
    go on with the argv it was given."""
    scope = tmp_path / "job.scope"
    scope.mkdir()
    for cgroup in (tmp_path, scope):
        (cgroup / "memory.events").write_text("oom 0\noom_kill 0\n")
    cage = ScopeCage(str(scope), 5 * MIB, str(tmp_path), "swarmdeck-job-1", "swarmdeck.slice")
    gated = cage.command(["sh", "-c", "echo went $0", "on"])
    argv = gated[gated.index("--") + 1 :]
    child = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    cage.after_start(child.pid)
    assert cage.priority_fds(), "memory.events was opened while the job was held"
    out, _ = child.communicate(timeout=10)
    assert (child.returncode, out) == (0, "went on\n")
    cage.remove()


def test_a_scoped_job_that_never_reached_the_gate_is_left_for_the_runner_to_reap(
    tmp_path: Path,
) -> None:
    cage = ScopeCage(str(tmp_path / "never"), 5 * MIB, str(tmp_path), "u", "s.slice")
    child = subprocess.Popen(["sh", "-c", "exit 3"])
    cage.after_start(child.pid)
    assert cage.priority_fds() == []
    assert child.wait(timeout=10) == 3


def test_scope_is_not_available_without_systemd_as_init() -> None:
    site = scope_site("", parse_mountinfo(MOUNTINFO))
    assert not site.available and "PID 1" in site.reason


def test_a_slice_unit_in_the_config_goes_to_systemd_when_systemd_runs_the_machine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`memory.slice = "NAME.slice"` names a systemd unit: on a systemd machine it is systemd's
    to make (found on the systemd guest of `make test-v2`, where the v2 backend took the name
    as a raw cgroup at the hierarchy's root, beside systemd's own slices, without telling it)."""
    if shutil.which("systemd-run") is None:
        pytest.skip("needs systemd-run installed (systemd need not run)")
    monkeypatch.setattr(cgroups, "SYSTEMD_BOOTED", str(tmp_path))
    v2, v1, scope = slice_sites("swarmdeck-test.slice")
    assert not v2.available and not v1.available
    assert "systemd slice unit swarmdeck-test.slice" in v1.reason
    assert scope.available and scope.unit == "swarmdeck-test.slice"
    assert scope.path is not None and scope.path.endswith("/swarmdeck.slice/swarmdeck-test.slice")
    assert slice_sites("swarmdeck-test")[1].available, "a plain name is still a cgroup"


def test_prepare_slice_caps_the_slice(v1_slice: Path) -> None:
    backend = v1_backend(v1_slice)
    backend.prepare_slice(64 * MIB)
    assert int((v1_slice / "memory.limit_in_bytes").read_text()) == 64 * MIB


def test_a_job_joins_its_cage_before_it_runs(v1_slice: Path, backend: V1Backend) -> None:
    cage = backend.create_cage(1, 32 * MIB)
    proc = subprocess.run(
        ["cat", "/proc/self/cgroup"], preexec_fn=cage.join, capture_output=True, text=True,
        check=True,
    )
    memory_line = next(line for line in proc.stdout.splitlines() if ":memory:" in line)
    assert memory_line.endswith("/" + Path(cage.path).relative_to(v1_slice.parent).as_posix())
    cage.remove()
    assert not os.path.exists(cage.path)


THREADED_JOIN = """
import sys, threading
from pathlib import Path
from swarmdeck.actions.cage.v1 import V1Cage
release = threading.Event()
helper = threading.Thread(target=release.wait)
helper.start()
V1Cage(Path(sys.argv[1]), 0, Path(sys.argv[2])).join()
for task in sorted(Path("/proc/self/task").iterdir()):
    print(next(l for l in (task / "cgroup").read_text().splitlines() if ":memory:" in l))
release.set()
"""


def test_a_process_with_more_threads_joins_its_cage_with_all_of_them(
    v1_slice: Path, backend: V1Backend
) -> None:
    cage = backend.create_cage(1, 32 * MIB)
    proc = subprocess.run(
        [sys.executable, "-c", THREADED_JOIN, str(cage.path), str(v1_slice)],
        capture_output=True, text=True, check=True,
    )
    lines = proc.stdout.splitlines()
    assert len(lines) == 2
    inside = "/" + Path(cage.path).relative_to(v1_slice.parent).as_posix()
    assert all(line.endswith(inside) for line in lines), lines
    cage.remove()


def test_own_cap_oom_is_classified_as_own_cap(backend: V1Backend) -> None:
    cage, proc = run_caged(backend, 1, 30 * MIB, hog(60))
    assert proc.wait(timeout=60) == -9
    assert cage.lost_process()
    assert classify_oom(cage.evidence()) is OomVerdict.OWN_CAP
    cage.remove()


def test_slice_full_oom_is_classified_as_slice_full_for_the_victim_only(
    backend: V1Backend,
) -> None:
    """The holder holds 70M of the 100M slice until it is killed; the grower then asks 50M."""
    holder, holder_proc = run_caged(backend, 1, 90 * MIB, hog(70, hold=600))
    assert holder_proc.stdout is not None and holder_proc.stdout.readline()
    grower, grower_proc = run_caged(backend, 2, 90 * MIB, hog(50))
    assert grower_proc.wait(timeout=60) == 0
    assert holder_proc.wait(timeout=60) == -9
    assert classify_oom(holder.evidence()) is OomVerdict.SLICE_FULL
    assert classify_oom(grower.evidence()) is OomVerdict.NONE
    holder.remove()
    grower.remove()


def test_a_cage_reads_its_working_set(backend: V1Backend) -> None:
    cage, proc = run_caged(backend, 1, 60 * MIB, hog(20, hold=600))
    assert proc.stdout is not None and proc.stdout.readline()
    reading = cage.reading()
    assert reading is not None and reading.working_set >= 20 * MIB
    assert cage.members() == [proc.pid]
    proc.kill()
    proc.wait()
    cage.remove()
    assert read_memory(cage.path) is None


def test_a_v2_cage_keeps_its_oom_evidence_after_its_cgroup_is_gone(tmp_path: Path) -> None:
    """systemd removes a scope's cgroup as soon as its last process is gone, often before the
    runner reads why it went (found on the systemd guest of `make test-v2`: a job over its
    scope's cap exited 137, not 250). The cage remembers what it read while the files were
    there: here a cgroup made of plain files, removed after the kill was seen."""
    slice_dir, job = tmp_path / "slice", tmp_path / "slice" / "job"
    job.mkdir(parents=True)
    (slice_dir / "memory.events.local").write_text("low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n")
    for name in ("memory.events", "memory.events.local"):
        (job / name).write_text("low 0\nhigh 0\nmax 3\noom 0\noom_kill 0\n")
    (job / "memory.peak").write_text(f"{30 * MIB}\n")
    cage = V2Cage(str(job), 30 * MIB, str(slice_dir))
    cage.before_start()
    assert not cage.lost_process()
    for name in ("memory.events", "memory.events.local"):
        (job / name).write_text("low 0\nhigh 0\nmax 9\noom 1\noom_kill 1\n")
    cage.drain()
    for name in ("memory.events", "memory.events.local", "memory.peak"):
        (job / name).unlink()
    job.rmdir()
    assert cage.lost_process()
    assert classify_oom(cage.evidence()) == OomVerdict.OWN_CAP
    cage.release()


def v2_cage_of_files(tmp_path: Path) -> tuple[V2Cage, Path, Path]:
    """A v2 cage over plain files: the slice's local counts and the job's, all at zero."""
    slice_dir, job = tmp_path / "slice", tmp_path / "slice" / "job"
    job.mkdir(parents=True)
    for path in (slice_dir / "memory.events.local", job / "memory.events",
                 job / "memory.events.local"):
        path.write_text("low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n")
    cage = V2Cage(str(job), 30 * MIB, str(slice_dir))
    cage.before_start()
    return cage, slice_dir, job


def remove_files(job: Path) -> None:
    for path in job.iterdir():
        path.unlink()
    job.rmdir()


def test_a_scope_removed_after_an_oom_at_its_cap_but_before_the_kill_was_read_is_own_cap(
    tmp_path: Path,
) -> None:
    """On the systemd guest the last reading of a user's scope said `oom 1` with `oom_kill 0`:
    systemd removed the scope before the kill was counted where the runner could see it. An
    OOM counted at the job's own limit before its cgroup vanished is what killed it."""
    cage, _, job = v2_cage_of_files(tmp_path)
    for name in ("memory.events", "memory.events.local"):
        (job / name).write_text("low 0\nhigh 0\nmax 18\noom 1\noom_kill 0\n")
    cage.drain()
    assert not cage.lost_process() and not cage.oom_before_removal()
    remove_files(job)
    assert cage.oom_before_removal()
    assert classify_oom(cage.evidence()) == OomVerdict.OWN_CAP
    cage.release()


def test_a_scope_removed_at_its_cap_before_any_oom_was_read_is_own_cap(tmp_path: Path) -> None:
    """The systemd guest's fourth run: the last reading said `max 12`, `oom 0`, the scope was
    gone at the next, and the job had died of SIGKILL. A job whose high-water mark reached its
    cap had hit it."""
    cage, _, job = v2_cage_of_files(tmp_path)
    (job / "memory.peak").write_text(f"{30 * MIB}\n")
    cage.drain()
    remove_files(job)
    assert cage.oom_before_removal()
    assert classify_oom(cage.evidence()) == OomVerdict.OWN_CAP
    cage.release()


def test_a_scope_removed_after_a_clean_exit_below_its_cap_lost_nothing(tmp_path: Path) -> None:
    cage, _, job = v2_cage_of_files(tmp_path)
    (job / "memory.peak").write_text(f"{10 * MIB}\n")
    cage.drain()
    remove_files(job)
    assert not cage.oom_before_removal()
    assert classify_oom(cage.evidence()) == OomVerdict.NONE
    cage.release()


def test_a_scope_removed_after_the_slice_filled_is_slice_full(tmp_path: Path) -> None:
    cage, slice_dir, job = v2_cage_of_files(tmp_path)
    remove_files(job)
    assert not cage.oom_before_removal()
    (slice_dir / "memory.events.local").write_text("low 0\nhigh 0\nmax 4\noom 1\noom_kill 1\n")
    assert cage.oom_before_removal()
    assert classify_oom(cage.evidence()) == OomVerdict.SLICE_FULL
    cage.release()


def test_a_users_scope_slice_is_looked_for_under_its_user_manager(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`systemd-run --user` puts the slice in the user manager's own subtree, not at the root
    (found on the systemd guest of `make test-v2`: the cage was looked for at
    /sys/fs/cgroup/swarmdeck.slice, never found, and a job over its cap exited 137, not 250)."""
    if shutil.which("systemd-run") is None:
        pytest.skip("needs systemd-run installed (systemd need not run)")
    monkeypatch.setattr(cgroups, "SYSTEMD_BOOTED", str(tmp_path))
    monkeypatch.setattr(cgroups.os, "geteuid", lambda: 1000)
    (tmp_path / "cgroup.controllers").write_text("cpu memory pids\n")
    hier = Hierarchies(None, str(tmp_path))
    manager = "/user.slice/user-1000.slice/user@1000.service"
    inside = OwnCgroups(None, f"{manager}/app.slice/run-u7.service")
    site = scope_site("", hier, inside)
    assert site.available and site.path == f"{tmp_path}{manager}/swarmdeck.slice"
    elsewhere = OwnCgroups(None, "/user.slice/user-1000.slice/session-3.scope")
    assert scope_site("", hier, elsewhere).path == f"{tmp_path}{manager}/swarmdeck.slice"
    monkeypatch.setattr(cgroups.os, "geteuid", lambda: 0)
    assert scope_site("", hier, inside).path == f"{tmp_path}/swarmdeck.slice"
