"""The places swarmdeck keeps its state and reads its config come from the environment: a
variable set but left empty, or a state folder it cannot make private, is refused in one line
with 251 before any command touches a default, never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from swarmdeck.exitcodes import ExitCode

SWARMDECK = str(Path(sys.executable).with_name("swarmdeck"))

COMMANDS = [["status"], ["run", "--", "true"], ["lock", "show", "."], ["config", "show"]]


def _swarmdeck(argv: list[str], tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """The command with `env` over the test's own places: HOME in its folder, and a config
    naming a slice of its own, so a refusal that failed would touch neither the user's
    ~/.claude nor the machine's default slice."""
    config = tmp_path / "places.toml"
    config.write_text(f'[memory]\nslice = "swarmdeck-test-{os.getpid()}-places"\n')
    own = {"HOME": str(tmp_path / "home"), "SWARMDECK_CONFIG": str(config)}
    return subprocess.run(
        [SWARMDECK, *argv], capture_output=True, text=True, timeout=60, cwd=tmp_path,
        env={**os.environ, **own, **env},
    )


@pytest.mark.parametrize("argv", [["status"], ["run", "--", "true"]], ids=" ".join)
def test_a_state_folder_that_cannot_be_made_private_is_one_line_and_251(
    argv: list[str], tmp_path: Path
) -> None:
    done = _swarmdeck(argv, tmp_path, SWARMDECK_STATE_DIR="/proc/1")
    assert done.returncode == ExitCode.USAGE, done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    assert "state folder /proc/1" in done.stderr, done.stderr
    assert "SWARMDECK_STATE_DIR" in done.stderr, done.stderr


EMPTY = ["SWARMDECK_STATE_DIR", "SWARMDECK_CONFIG", "CLAUDE_CONFIG_DIR"]


@pytest.mark.parametrize("value", ["", "  "], ids=["empty", "blank"])
@pytest.mark.parametrize("variable", EMPTY)
@pytest.mark.parametrize("argv", COMMANDS, ids=" ".join)
def test_a_place_variable_set_but_empty_is_refused_before_any_default_is_touched(
    argv: list[str], variable: str, value: str, tmp_path: Path
) -> None:
    done = _swarmdeck(argv, tmp_path, **{variable: value})
    assert done.returncode == ExitCode.USAGE, done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    assert f"{variable} is set but empty: unset it for the default" in done.stderr
    assert done.stdout == ""
    assert not (tmp_path / "xdg-state").exists()
    assert not (tmp_path / "state").exists()
    assert not (tmp_path / "home").exists()


def test_help_still_answers_with_an_empty_place_variable(tmp_path: Path) -> None:
    done = _swarmdeck(["status", "--help"], tmp_path, SWARMDECK_STATE_DIR="")
    assert done.returncode == 0, done.stderr
