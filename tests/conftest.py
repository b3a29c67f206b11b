"""Shared fixtures: every test gets its own state, config and Claude Code folders in tmp_path."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point every path swarmdeck reads or writes into this test's own folder."""
    monkeypatch.setenv("SWARMDECK_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("SWARMDECK_CONFIG", str(tmp_path / "config.toml"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg-state"))
    monkeypatch.setenv("SWARMDECK_RUN_DIR", str(tmp_path / "run"))
    return tmp_path
