"""Hostile values on the command line (1e999, inf, nan, negatives, empty text, a slice name
that climbs out of the hierarchy) are refused where the flag is read: one line saying what is
wrong and what to give, exit 251, nothing run and no traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from swarmdeck.exitcodes import ExitCode

SWARMDECK = str(Path(sys.executable).with_name("swarmdeck"))


@pytest.fixture(autouse=True)
def own_slice(isolated_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A config naming a slice of the test's own: a flag that slipped through would run its job
    there, never in the machine's default slice."""
    config = isolated_home / "config.toml"
    config.write_text(f'[memory]\nslice = "swarmdeck-test-{os.getpid()}-refused"\n')
    monkeypatch.setenv("SWARMDECK_CONFIG", str(config))

SPANS = [
    (["dispatch", "--estimate-wall", "1e999"], "--estimate-wall: 1e999 is over a year"),
    (["dispatch", "--estimate-wall", "0"], "--estimate-wall: 0 is no time at all"),
    (["dispatch", "--wait", "inf"], "--wait: inf is over a year"),
    (["run", "--timeout", "1e400"], "--timeout: 1e400 is over a year"),
    (["run", "--timeout", "-5"], "--timeout: -5 is below 0"),
    (["run", "--timeout", ""], "--timeout: '' is not a number of seconds"),
    (["run", "--wait", "inf"], "--wait: inf is over a year"),
    (["run", "--wait=nan"], "--wait: nan is not a number of seconds"),
    (["run", "--wait", "40000000"], "--wait: 40000000 is over a year"),
    (["gpu-run", "--wait-limit", "nan"], "--wait-limit: nan is not a number of seconds"),
    (["gpu-run", "--wait-limit", "-1"], "--wait-limit: -1 is below 0"),
    (["demo", "--step", "nan"], "--step: nan is not a number of seconds"),
    (["demo", "--no-ui", "--seconds", "inf"], "--seconds: inf is over a year"),
]


@pytest.mark.parametrize(("argv", "says"), SPANS, ids=[" ".join(argv) for argv, _ in SPANS])
def test_a_span_no_flag_may_give_is_one_line_and_251_and_nothing_runs(
    argv: list[str], says: str, tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    command = [] if argv[0] == "demo" else ["--", "touch", str(marker)]
    done = subprocess.run(
        [SWARMDECK, *argv, *command], capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert done.returncode == ExitCode.USAGE, done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    assert says in done.stderr and "(see 'swarmdeck " in done.stderr, done.stderr
    assert done.stdout == ""
    assert not marker.exists()


def test_lock_acquire_refuses_an_endless_timeout_before_taking_the_lock(
    tmp_path: Path,
) -> None:
    done = subprocess.run(
        [SWARMDECK, "lock", "acquire", str(tmp_path), "--session", "A", "--timeout", "inf"],
        capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == ExitCode.USAGE, done.stderr
    assert done.stderr.count("\n") == 1 and "--timeout: inf is over a year" in done.stderr
    shown = subprocess.run(
        [SWARMDECK, "lock", "show", str(tmp_path)], capture_output=True, text=True, timeout=60
    )
    assert shown.stdout.endswith(": free\n"), shown.stdout


def test_a_demo_slice_that_is_no_safe_cgroup_name_is_refused_before_any_scene() -> None:
    done = subprocess.run(
        [SWARMDECK, "demo", "--no-ui", "--seconds", "1", "--slice", "../../x"],
        capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == ExitCode.USAGE, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert "--slice: '../../x' is not a usable slice" in done.stderr
    assert "demo scene" not in done.stderr and done.stdout == ""


IDS = [
    ["alerts", "--ack", "99999999999999999999"],
    ["kills", "--request", "99999999999999999999"],
    ["approve", "99999999999999999999"],
    ["deny", "0"],
    ["peer", "attach", "box2", "-7"],
]


@pytest.mark.parametrize("argv", IDS, ids=[" ".join(argv) for argv in IDS])
def test_an_id_swarmdeck_never_gives_is_one_line_and_251(argv: list[str]) -> None:
    done = subprocess.run([SWARMDECK, *argv], capture_output=True, text=True, timeout=60)
    assert done.returncode == ExitCode.USAGE, done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    assert f"{argv[-1]} is no id swarmdeck gives: ids are whole numbers from 1" in done.stderr


EMPTY = [
    (["watch", "--wake", "--session", ""], "--session: an empty session id names no session"),
    (["hooks", "install", "--project", ""], "--project: an empty path names no folder"),
]


@pytest.mark.parametrize(("argv", "says"), EMPTY, ids=[" ".join(argv) for argv, _ in EMPTY])
def test_an_empty_name_is_refused_rather_than_read_as_any_or_here(
    argv: list[str], says: str, tmp_path: Path
) -> None:
    done = subprocess.run(
        [SWARMDECK, *argv], capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert done.returncode == ExitCode.USAGE, done.stderr
    assert done.stderr.count("\n") == 1 and says in done.stderr, done.stderr
    assert not (tmp_path / ".claude").exists()
