"""paths: a place variable set but empty is refused rather than read as the default, and a
state folder that cannot be created or narrowed is refused in one line."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from swarmdeck import paths
from swarmdeck.errors import ConfigError, StateError


@pytest.mark.parametrize("value", ["", " \t"])
def test_an_empty_state_dir_is_refused_not_read_as_the_default(
    value: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SWARMDECK_STATE_DIR", value)
    with pytest.raises(StateError, match="SWARMDECK_STATE_DIR is set but empty: unset it"):
        Path(paths.state_dir())
    assert paths.empty_place_refusal() is not None


def test_an_empty_config_is_refused_not_read_as_the_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SWARMDECK_CONFIG", "")
    with pytest.raises(ConfigError, match="SWARMDECK_CONFIG is set but empty: unset it"):
        Path(paths.config_path())


def test_an_empty_claude_dir_is_refused_not_read_as_the_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", "")
    with pytest.raises(ConfigError, match="CLAUDE_CONFIG_DIR is set but empty: unset it"):
        Path(paths.claude_dir())


def test_unset_place_variables_give_the_defaults(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("SWARMDECK_STATE_DIR", "SWARMDECK_CONFIG", "CLAUDE_CONFIG_DIR"):
        monkeypatch.delenv(name)
    assert paths.empty_place_refusal() is None
    assert Path(paths.state_dir()) == isolated_home / "xdg-state" / "swarmdeck"
    config = isolated_home / "xdg-config" / "swarmdeck" / "config.toml"
    assert Path(paths.config_path()) == config


@pytest.mark.skipif(os.geteuid() != 0, reason="only root passes /proc/1's owner check")
def test_a_folder_whose_mode_cannot_be_narrowed_is_refused_in_one_line() -> None:
    with pytest.raises(StateError, match=r"cannot make the state folder /proc/1 private"):
        paths.private_dir("/proc/1")


def test_a_folder_under_a_file_cannot_be_created_and_says_so(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    with pytest.raises(StateError, match="cannot create the state folder"):
        paths.private_dir(str(tmp_path / "file" / "state"))


def test_a_dangling_link_is_named_with_its_target(tmp_path: Path) -> None:
    link, gone = tmp_path / "state", str(tmp_path / "gone")
    link.symlink_to(gone)
    assert paths.state_dir_refusal(str(link)) == (
        f"state folder {link} links to {gone!r}, which does not exist"
    )
    assert paths.state_dir_refusal(str(tmp_path / "none")) == (
        f"state folder {tmp_path / 'none'} does not exist"
    )
