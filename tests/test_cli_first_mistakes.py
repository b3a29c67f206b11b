"""The first mistakes a new user makes get one line that says what to do: a mistyped command
gets the command meant, a size without a unit in the config is refused naming the units, and a
config file that SWARMDECK_CONFIG names but that does not exist is an error, not the defaults."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from swarmdeck.exitcodes import ExitCode

SWARMDECK = str(Path(sys.executable).with_name("swarmdeck"))


def _swarmdeck(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [SWARMDECK, *argv], capture_output=True, text=True, timeout=60, env=env or dict(os.environ)
    )


@pytest.mark.parametrize(("typed", "meant"), [("stauts", "status"), ("wacth", "watch"),
                                              ("hoks", "hooks"), ("dispach", "dispatch")])
def test_a_mistyped_command_is_told_the_command_it_is_close_to(typed: str, meant: str) -> None:
    done = _swarmdeck(typed)
    assert done.returncode == ExitCode.USAGE
    assert done.stderr.count("\n") == 1, done.stderr
    assert f"unknown command '{typed}'; did you mean '{meant}'?" in done.stderr


def test_a_command_like_no_other_lists_the_commands_in_one_line() -> None:
    done = _swarmdeck("xyzzy")
    assert done.returncode == ExitCode.USAGE
    assert done.stderr.count("\n") == 1, done.stderr
    assert "unknown command 'xyzzy'" in done.stderr and "status" in done.stderr
    assert "did you mean" not in done.stderr


@pytest.mark.parametrize("written", ["4", '"4"', "2048", '"512"'])
def test_a_size_without_a_unit_in_the_config_is_refused_naming_the_units(
    written: str, isolated_home: Path
) -> None:
    Path(os.environ["SWARMDECK_CONFIG"]).write_text(f"[memory]\nreserve = {written}\n")
    done = _swarmdeck("config", "show")
    assert done.returncode == ExitCode.USAGE
    assert done.stderr.count("\n") == 1, done.stderr
    assert "memory.reserve" in done.stderr and "has no unit" in done.stderr
    assert "K, M, G or T" in done.stderr and "B\" for bytes" in done.stderr


@pytest.mark.parametrize("written", ["0", '"4096B"', '"2G"', '"10%"'])
def test_a_size_with_a_unit_or_zero_in_the_config_is_taken(
    written: str, isolated_home: Path
) -> None:
    Path(os.environ["SWARMDECK_CONFIG"]).write_text(f"[memory]\nmargin = {written}\n")
    done = _swarmdeck("config", "show")
    assert done.returncode == 0, done.stderr


def test_a_config_that_swarmdeck_config_names_but_is_missing_is_an_error(
    isolated_home: Path,
) -> None:
    missing = isolated_home / "no-such" / "config.toml"
    done = _swarmdeck("status", env=dict(os.environ, SWARMDECK_CONFIG=str(missing)))
    assert done.returncode == ExitCode.USAGE
    assert done.stderr.count("\n") == 1, done.stderr
    assert str(missing) in done.stderr and "does not exist" in done.stderr
    assert "unset SWARMDECK_CONFIG" in done.stderr


def test_without_swarmdeck_config_a_missing_file_means_the_defaults(isolated_home: Path) -> None:
    env = {key: value for key, value in os.environ.items() if key != "SWARMDECK_CONFIG"}
    assert not (isolated_home / "xdg-config" / "swarmdeck" / "config.toml").exists()
    done = _swarmdeck("config", "show", env=env)
    assert done.returncode == 0, done.stderr
