"""A hook called with a place variable set but empty does nothing: no answer, nothing recorded,
neither in the default state folder nor anywhere else; it exits 0 with a note on stderr."""

from __future__ import annotations

from pathlib import Path

import pytest

from claude_lines import bash_payload

PLACES = ["SWARMDECK_STATE_DIR", "SWARMDECK_CONFIG", "CLAUDE_CONFIG_DIR"]


@pytest.mark.parametrize("variable", PLACES)
def test_an_empty_place_variable_makes_the_hook_do_nothing(
    variable: str, run_hook, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (isolated_home / "config.toml").write_text('[hooks]\nheavy_patterns = ["pytest"]\n')
    # Where a hook that fell back to defaults would read Claude Code's folder: the test's own.
    monkeypatch.setenv("HOME", str(isolated_home / "home"))
    monkeypatch.setenv(variable, "")
    done = run_hook("pre-tool-use", bash_payload("pytest -q"))
    assert done.returncode == 0
    assert done.stdout == ""
    assert f"{variable} is set but empty" in done.stderr
    assert not (isolated_home / "state").exists()
    assert not (isolated_home / "xdg-state").exists()
    assert not (isolated_home / "home").exists()
