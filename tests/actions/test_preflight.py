"""`swarmdeck run --inputs/--needs/--single/--needs-gpu`: the real command, a real git checkout,
a real caged run in a slice of the test's own; a refusal is 78 and nothing ran."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from cagekit import SWARMDECK

from swarmdeck.state import StateStore
from waiting import wait_for

UNCHANGED = "unchanged since job 1 (ok, "


def run(cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [SWARMDECK, "run", *args], cwd=cwd, capture_output=True, text=True, timeout=60,
        env={**os.environ, **(env or {})},
    )


@pytest.fixture
def checkout(tmp_path: Path, own_slice: Path) -> Path:
    """A git checkout with src/a.py and tests/t.py tracked; `ran` (ignored) counts runs."""
    work = tmp_path / "work"
    (work / "src").mkdir(parents=True)
    (work / "tests").mkdir()
    (work / "src" / "a.py").write_text("A = 1\n")
    (work / "tests" / "t.py").write_text("T = 1\n")
    (work / ".gitignore").write_text("ran\n")
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    subprocess.run(["git", "-C", str(work), "add", "-A"], check=True)
    return work


COUNT = ["sh", "-c", "echo x >> ran"]
"""The job: one line in `ran` per run, so a test sees whether it ran."""


def runs(work: Path) -> int:
    path = work / "ran"
    return len(path.read_text().splitlines()) if path.exists() else 0


def test_an_unchanged_tree_exits_78_at_once_saying_since_which_job(checkout: Path) -> None:
    assert run(checkout, "--inputs", "src", "tests", "--", *COUNT).returncode == 0
    again = run(checkout, "--inputs", "src", "tests", "--", *COUNT)
    assert again.returncode == 78, again.stderr
    assert UNCHANGED in again.stderr
    assert "ago): nothing to do; --force runs it anyway" in again.stderr
    assert again.stderr.count("\n") == 1
    assert runs(checkout) == 1


def test_force_runs_an_unchanged_tree_anyway(checkout: Path) -> None:
    assert run(checkout, "--inputs", "src", "--", *COUNT).returncode == 0
    assert run(checkout, "--inputs", "src", "--force", "--", *COUNT).returncode == 0
    assert runs(checkout) == 2


@pytest.mark.parametrize("change", ["edit", "stage", "new file"])
def test_a_changed_input_reruns(checkout: Path, change: str) -> None:
    assert run(checkout, "--inputs", "src", "--", *COUNT).returncode == 0
    if change == "new file":
        (checkout / "src" / "b.py").write_text("B = 1\n")
    else:
        (checkout / "src" / "a.py").write_text("A = 2\n")
        if change == "stage":
            subprocess.run(["git", "-C", str(checkout), "add", "-A"], check=True)
    assert run(checkout, "--inputs", "src", "--", *COUNT).returncode == 0
    assert runs(checkout) == 2


def test_a_change_outside_the_inputs_does_not_rerun(checkout: Path) -> None:
    assert run(checkout, "--inputs", "src", "--", *COUNT).returncode == 0
    (checkout / "tests" / "t.py").write_text("T = 2\n")
    assert run(checkout, "--inputs", "src", "--", *COUNT).returncode == 78
    assert runs(checkout) == 1


def test_a_failed_last_run_reruns(checkout: Path) -> None:
    fail = ["sh", "-c", 'echo x >> ran; [ "$(wc -l < ran)" -gt 1 ]']
    assert run(checkout, "--inputs", "src", "--", *fail).returncode == 1
    assert run(checkout, "--inputs", "src", "--", *fail).returncode == 0
    assert run(checkout, "--inputs", "src", "--", *fail).returncode == 78
    assert runs(checkout) == 2


def test_a_different_command_does_not_share_the_fingerprint(checkout: Path) -> None:
    assert run(checkout, "--inputs", "src", "--", *COUNT).returncode == 0
    other = ["sh", "-c", "echo y >> ran"]
    assert run(checkout, "--inputs", "src", "--", *other).returncode == 0
    assert runs(checkout) == 2


def test_a_named_variable_is_an_input(checkout: Path) -> None:
    assert run(checkout, "--inputs", "src", "$MODE", "--", *COUNT,
               env={"MODE": "fast"}).returncode == 0
    assert run(checkout, "--inputs", "src", "$MODE", "--", *COUNT,
               env={"MODE": "fast"}).returncode == 78
    assert run(checkout, "--inputs", "src", "$MODE", "--", *COUNT,
               env={"MODE": "slow"}).returncode == 0
    assert runs(checkout) == 2


def test_files_outside_a_checkout_are_compared_by_identity(tmp_path: Path, own_slice) -> None:
    work = tmp_path / "plain"
    work.mkdir()
    data = work / "data.txt"
    data.write_text("1\n")
    assert run(work, "--inputs", "data.txt", "--", *COUNT).returncode == 0
    assert run(work, "--inputs", "data.txt", "--", *COUNT).returncode == 78
    os.utime(data, ns=(data.stat().st_atime_ns, data.stat().st_mtime_ns + 1_000_000))
    assert run(work, "--inputs", "data.txt", "--", *COUNT).returncode == 0
    assert runs(work) == 2


def test_a_script_header_names_its_inputs(checkout: Path) -> None:
    script = checkout / "check.sh"
    script.write_text("#!/bin/sh\n# swarmdeck: inputs src/\necho x >> ran\n")
    assert run(checkout, "--", "sh", "check.sh").returncode == 0
    again = run(checkout, "--", "sh", "check.sh")
    assert again.returncode == 78 and UNCHANGED in again.stderr
    (checkout / "src" / "a.py").write_text("A = 3\n")
    assert run(checkout, "--", "sh", "check.sh").returncode == 0
    assert runs(checkout) == 2


def test_inputs_with_detach_is_a_usage_error(checkout: Path) -> None:
    done = run(checkout, "--inputs", "src", "--detach", "--", *COUNT)
    assert done.returncode == 251 and "--inputs and --detach" in done.stderr
    assert runs(checkout) == 0


def test_a_missing_tool_exits_78_naming_it_and_nothing_runs(checkout: Path) -> None:
    done = run(checkout, "--needs", "sh", "no-such-tool-here", "--", *COUNT)
    assert done.returncode == 78
    assert "needs no-such-tool-here, which is not on PATH" in done.stderr
    assert "drop --needs no-such-tool-here" in done.stderr
    assert runs(checkout) == 0
    assert run(checkout, "--needs", "sh", "git", "--", *COUNT).returncode == 0


def test_needs_gpu_without_one_exits_78_and_nothing_runs(checkout: Path) -> None:
    """This machine has no GPU (no NVML library): the condition is unmet, as it should be."""
    done = run(checkout, "--needs-gpu", "--", *COUNT)
    assert done.returncode == 78, done.stderr
    assert "needs a GPU, and none can be read here" in done.stderr
    assert runs(checkout) == 0


def test_single_refuses_while_another_run_of_the_label_is_live(
    checkout: Path, isolated_home: Path
) -> None:
    release = checkout / "release"
    first = subprocess.Popen(
        [SWARMDECK, "run", "--label", "nightly", "--single", "--", "sh", "-c",
         f'while [ ! -e "{release}" ]; do sleep 0.05; done'],
        cwd=checkout, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        store = StateStore(isolated_home / "state" / "state.db")

        def running() -> bool:
            with store.read() as conn:
                row = conn.execute("SELECT state FROM jobs WHERE label = 'nightly'").fetchone()
            return row is not None and row[0] == "running"

        wait_for(running)
        second = run(checkout, "--label", "nightly", "--single", "--", *COUNT)
        assert second.returncode == 78
        assert "another run labelled 'nightly' is live (job 1" in second.stderr
        assert run(checkout, "--label", "other", "--single", "--", *COUNT).returncode == 0
    finally:
        release.touch()
        first.communicate(timeout=60)
    assert first.returncode == 0
    assert run(checkout, "--label", "nightly", "--single", "--", *COUNT).returncode == 0
    assert runs(checkout) == 2


def test_needs_gpu_runs_where_a_card_can_be_read(
    checkout: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No GPU here: this host's NVML is the scripted stand-in (tests/nvml_standin.py) with
    one card, and the run is called in process so that it reads it."""
    from nvml_standin import ScriptedNvml
    from swarmdeck.cli import main
    from swarmdeck.probes import nvml as nvml_module

    monkeypatch.setattr(nvml_module, "_shared", nvml_module.Nvml(ScriptedNvml()))
    monkeypatch.chdir(checkout)
    assert main(["run", "--needs-gpu", "--", *COUNT]) == 0
    assert runs(checkout) == 1


def test_conditions_with_on_slurm_are_a_usage_error(checkout: Path) -> None:
    done = run(checkout, "--on", "slurm", "--needs", "sh", "--", *COUNT)
    assert done.returncode == 251 and "do not go with --on slurm" in done.stderr
    assert done.stderr.count("\n") == 1 and runs(checkout) == 0
