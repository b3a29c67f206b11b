"""Fixtures of the cgroup v2 tier: they run inside the guest that `make test-v2` boots.

The guest is a Debian kernel on this machine's own root file system, read-only but for its /tmp
(an overlay that never reaches the host) and the results folder. Every test has its own state,
config and run folders in tmp_path, and slices of its own at the cgroup2 root, as the main suite
has them in the cgroup v1 hierarchy; the helpers (tests/actions/cagekit.py) are the same ones.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[2] / "tests"
for folder in (TESTS, TESTS / "actions"):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))

from cagekit import new_slice, remove_tree, v2_root  # noqa: E402


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Outside a cgroup v2 host with the memory controller every test here is skipped."""
    if v2_root() is not None:
        return
    skip = pytest.mark.skip(reason="needs a cgroup v2 host with the memory controller, as root")
    for item in items:
        item.add_marker(skip)


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point every path swarmdeck reads or writes into this test's own folder."""
    monkeypatch.setenv("SWARMDECK_STATE_DIR", str(tmp_path / "state"))
    # An empty file, the defaults: a config SWARMDECK_CONFIG names must exist.
    (tmp_path / "config.toml").touch()
    monkeypatch.setenv("SWARMDECK_CONFIG", str(tmp_path / "config.toml"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg-state"))
    monkeypatch.setenv("SWARMDECK_RUN_DIR", str(tmp_path / "run"))
    return tmp_path


@pytest.fixture
def v2_slice() -> Iterator[Path]:
    """A cgroup v2 slice of this test's own at the hierarchy's root, removed afterwards."""
    path = new_slice()
    try:
        yield path
    finally:
        remove_tree(path)


@pytest.fixture
def cgroup_root() -> Path:
    root = v2_root()
    assert root is not None
    return root


os.environ.pop("COLUMNS", None)
