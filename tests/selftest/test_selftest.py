"""`swarmdeck selftest`: the real command, its real cells and switches, in a sandbox it removes."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from swarmdeck.breaks import SWITCHES
from swarmdeck.hooks.guards import SAMPLES
from swarmdeck.probes.cgroups import read_hierarchies
from swarmdeck.probes.procs import environment, pids
from swarmdeck.selftest.every_cell import all_cells, reddening
from swarmdeck.selftest.guard_cells import guard_check
from swarmdeck.selftest.sandbox import CellFailed, Place
from swarmdeck.selftest.table import FAIL, PASS, SKIP, Result, SwitchResult, judge_switch
from waiting import wait_for

SWARMDECK = str(Path(sys.executable).parent / "swarmdeck")

pytestmark = pytest.mark.xdist_group("selftest")
"""One worker runs these in turn: each looks for selftest slices left anywhere on the machine,
and another test's selftest holding its slices at that moment would look like one left."""


def selftest(tmp_path: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    """`swarmdeck selftest ARGS` with its sandbox made under tmp_path (TMPDIR)."""
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    return subprocess.run(
        [SWARMDECK, "selftest", *args], capture_output=True, text=True, env=env, timeout=timeout
    )


def leftovers(tmp_path: Path) -> list[str]:
    """What a selftest left: its folders, processes pointing into them, its slices."""
    found = [str(path) for path in tmp_path.glob("swarmdeck-selftest-*")]
    marker = f"={tmp_path}/swarmdeck-selftest-".encode()
    found += [f"process {pid}" for pid in pids() if marker in environment(pid)]
    root = read_hierarchies().v1_memory
    if root is not None:
        found += [str(path) for path in Path(root).glob("swarmdeck-selftest-*")]
    return found


@pytest.mark.timeout(900)  # every cell once per switch: two to three minutes on 2 loaded cores
def test_breaks_every_cell_holds_and_every_switch_turns_exactly_its_cells_red(
    tmp_path: Path,
) -> None:
    """The whole proof, as a user runs it: every cell green, then each switch red where it
    names and nowhere else. A switch left unwired keeps its cells green and fails this."""
    done = selftest(tmp_path, "--breaks", "--json")
    report = json.loads(done.stdout)
    failed = [cell for cell in report["cells"] if cell["result"] != "pass"]
    failed += [row for row in report["breaks"] if row["result"] != "pass"]
    assert done.returncode == 0 and report["ok"], failed
    assert [cell["cell"] for cell in report["cells"]] == list(all_cells())
    assert {row["switch"] for row in report["breaks"]} == set(SWITCHES)
    assert leftovers(tmp_path) == []


def test_every_switch_names_a_cell_it_turns_red() -> None:
    table = reddening()
    assert set(table) == set(SWITCHES)
    assert all(table.values()), [switch for switch, cells in table.items() if not cells]


def test_one_cell_as_text_says_what_it_proves_and_removes_its_sandbox(tmp_path: Path) -> None:
    done = selftest(tmp_path, "--cell", "lock-live")
    assert done.returncode == 0, done.stderr
    assert "lock-live" in done.stdout and "not taken over" in done.stdout
    assert "pass" in done.stdout and "selftest: all held" in done.stdout
    assert "own-cap" not in done.stdout
    assert leftovers(tmp_path) == []


def test_an_unknown_cell_is_a_usage_error_in_one_line(tmp_path: Path) -> None:
    done = selftest(tmp_path, "--cell", "no-such-cell")
    assert done.returncode == 251
    assert done.stderr.count("\n") == 1 and "no selftest cell named 'no-such-cell'" in done.stderr
    assert leftovers(tmp_path) == []


def test_an_interrupted_selftest_leaves_nothing_behind(tmp_path: Path) -> None:
    """Ctrl-C while a cell's caged jobs hold their slice: the jobs, the slice and the sandbox
    are all gone when the selftest has ended."""
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    proc = subprocess.Popen(
        [SWARMDECK, "selftest", "--cell", "admissions", "--cell", "lock-live"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )
    marker = f"={tmp_path}/swarmdeck-selftest-".encode()
    wait_for(lambda: any(marker in environment(pid) for pid in pids()) or proc.poll() is not None)
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=120)
    assert leftovers(tmp_path) == []


def _row(turns_red: tuple[str, ...], *results: tuple[str, str]) -> SwitchResult:
    row = SwitchResult("no-x", turns_red)
    row.cells = [Result(name, "", status, "why", 0.0, "no-x") for name, status in results]
    judge_switch(row, {"a": "no cage here"})
    return row


def test_a_switch_whose_cell_stays_green_fails() -> None:
    row = _row(("a",), ("a", PASS), ("b", PASS))
    assert (row.result, row.reason) == (FAIL, "a stayed green")


def test_a_switch_that_turns_another_cell_red_fails() -> None:
    row = _row(("a",), ("a", FAIL), ("b", FAIL))
    assert row.result == FAIL and row.reason.startswith("b went red too")


def test_a_switch_whose_cells_could_not_run_is_a_skip_saying_why() -> None:
    row = _row(("a",), ("b", PASS))
    assert (row.result, row.reason) == (SKIP, "a skipped: no cage here")


def test_a_switch_set_around_the_selftest_changes_nothing_in_its_clean_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A switch in the caller's environment is not passed on to the clean pass's processes."""
    monkeypatch.setenv("SWARMDECK_BREAK", "no-cage-fallback")
    done = selftest(tmp_path, "--cell", "no-cage")
    assert done.returncode == 0, done.stdout
    assert leftovers(tmp_path) == []


CAGED = ["own-cap", "slice-full", "never-fits", "admissions", "peer-redact"]


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("unshare") is None,
    reason="needs root and unshare to hide the writable cgroup hierarchy",
)
def test_where_no_cage_can_be_made_the_caged_cells_skip_saying_why_and_the_rest_pass(
    tmp_path: Path,
) -> None:
    """As a user without a writable cgroup sees it: the cgroup v1 memory hierarchy is mounted
    read-only in a mount namespace of the test's own."""
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    script = (
        "mount -o remount,ro,bind /sys/fs/cgroup/memory && "
        f'exec "{SWARMDECK}" selftest --json'
    )
    done = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", script],
        capture_output=True, text=True, env=env, timeout=300,
    )
    report = json.loads(done.stdout)
    results = {cell["cell"]: cell for cell in report["cells"]}
    assert done.returncode == 0 and report["ok"], done.stdout
    for name in CAGED:
        assert results[name]["result"] == "skip", results[name]
        assert results[name]["reason"].startswith("no memory cage here: "), results[name]
        assert "/sys/fs/cgroup/memory is not writable" in results[name]["reason"]
    assert {results[name]["result"] for name in results if name not in CAGED} == {"pass"}
    assert leftovers(tmp_path) == []


def test_what_a_selftest_killed_outright_left_is_removed_by_the_next(tmp_path: Path) -> None:
    """SIGKILL leaves no chance to clean up: the folder, its caged jobs and their slice stay;
    the next selftest finds the owner gone and removes them before it starts."""
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    killed = subprocess.Popen(
        [SWARMDECK, "selftest", "--cell", "slice-full"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
    )
    root = read_hierarchies().v1_memory
    if root is None or not os.access(root, os.W_OK):
        killed.kill()
        killed.wait()
        pytest.skip("needs a writable cgroup v1 memory hierarchy (root on these machines)")

    def caged() -> bool:
        cages = Path(root).glob(f"swarmdeck-selftest-{killed.pid}-*/*")
        return any(path.is_dir() for path in cages) or killed.poll() is not None

    wait_for(caged)
    killed.kill()
    killed.wait()
    assert leftovers(tmp_path) != []
    done = selftest(tmp_path, "--cell", "lock-live")
    assert done.returncode == 0, done.stdout
    assert leftovers(tmp_path) == []


def test_a_guard_cell_whose_hook_gave_no_answer_says_why_not_that_it_allowed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hook that gives up (out of its answer budget, as in the cgroup v2 guest under qemu
    without KVM) lets the call through undecided: the cell says the hook gave no answer and
    why, not that the guard let its sample through. Here it gives up on an empty place."""
    place = Place(SimpleNamespace(marker=tmp_path / "marker", closing=False), tmp_path, None)
    for sub in ("state", "claude", "work"):
        (tmp_path / sub).mkdir()
    whole = place.env()
    monkeypatch.setattr(Place, "env", lambda self: {**whole, "CLAUDE_CONFIG_DIR": " "})
    check = guard_check(SAMPLES[0])
    with pytest.raises(CellFailed, match="gave no answer: swarmdeck hook: nothing done: "):
        check(place)
    place.end()


def test_a_wait_that_keeps_progressing_outlasts_the_deadline_and_a_stuck_one_fails(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Twenty runners on an emulated machine took over the cell's 60 s to be decided, one by
    one: the admissions cell fails only when none is decided for that long. Its clock is one
    of the test's own, which moves only by the cell's sleeps, so a loaded machine changes
    nothing."""
    from swarmdeck.selftest import cells

    clock = SimpleNamespace(now=0.0)
    monkeypatch.setattr(cells, "time", SimpleNamespace(
        monotonic=lambda: clock.now,
        sleep=lambda seconds: setattr(clock, "now", clock.now + seconds),
    ))
    monkeypatch.setattr(cells, "DEADLINE", 0.3)
    place = SimpleNamespace(sandbox=SimpleNamespace(closing=False))

    def slowly() -> int:
        return int(clock.now / 0.2)  # one step every 0.2 s, twenty steps in all: past 0.3 s

    cells.wait_progressing(place, slowly, 20, "runners")  # type: ignore[arg-type]
    assert clock.now >= 4.0
    with pytest.raises(CellFailed, match=r"runners: 3 of 20, none more within 0\.3 s"):
        cells.wait_progressing(place, lambda: 3, 20, "runners")  # type: ignore[arg-type]
