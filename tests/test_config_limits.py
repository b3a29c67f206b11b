"""Configs built to break the loader: FIFOs, devices, huge or deeply nested files, numbers at the
edge of what a float or a C long holds. Each is refused in one line with exit 251, at once."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import get_type_hints

import pytest

from swarmdeck.config import (
    MAX_CONFIG_BYTES,
    MAX_DEPTH,
    SECTIONS,
    describe_config,
    load_config,
)
from swarmdeck.errors import ConfigError
from swarmdeck.sizes import SizeSpec

SWARMDECK = Path(sys.executable).parent / "swarmdeck"


def _refused(path: Path) -> str:
    start = time.monotonic()
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert time.monotonic() - start < 5
    assert int(caught.value.exit_code) == 251
    message = caught.value.message
    assert "\n" not in message and str(path) in message
    return message


def _cli(args: list[str], config: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, SWARMDECK_CONFIG=str(config))
    return subprocess.run(
        [str(SWARMDECK), *args], capture_output=True, text=True, env=env, timeout=30,
        cwd=tmp_path, check=False,
    )


@pytest.mark.parametrize(
    "args", [["config", "show"], ["status"], ["probe", "--json"], ["run", "--", "true"]]
)
def test_a_fifo_config_is_refused_by_every_command(tmp_path: Path, args: list[str]) -> None:
    config = tmp_path / "fifo.toml"
    os.mkfifo(config)
    done = _cli(args, config, tmp_path)
    assert done.returncode == 251, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "FIFO" in lines[0] and "Traceback" not in done.stderr


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_a_device_config_is_refused(tmp_path: Path, device: str) -> None:
    link = tmp_path / "config.toml"
    link.unlink()
    link.symlink_to(device)
    assert "character device" in _refused(link)


def test_a_huge_sparse_config_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    with open(path, "wb") as handle:
        handle.truncate(2 * 1024**3)
    assert "over" in _refused(path)


def test_a_config_just_over_the_size_limit_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text("#" * (MAX_CONFIG_BYTES + 1))
    assert f"{MAX_CONFIG_BYTES}" in _refused(path) or "1 MiB" in _refused(path)


@pytest.mark.parametrize(
    "text",
    [
        "x = " + "[" * 100_000 + "]" * 100_000 + "\n",
        "x = " + "{a = " * 50_000 + "1" + "}" * 50_000 + "\n",
        "x = " + "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1) + "\n",
        "[" + ".".join(["a"] * 5000) + "]\n",
    ],
    ids=["100k arrays", "50k inline tables", "just too deep", "5000 dotted tables"],
)
def test_deep_nesting_is_refused_in_one_line(tmp_path: Path, text: str) -> None:
    path = tmp_path / "config.toml"
    path.write_text(text)
    assert "nested" in _refused(path)


def test_deep_nesting_through_the_cli_is_one_line(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text("x = " + "[" * 100_000 + "]" * 100_000 + "\n")
    for args in (["config", "show"], ["status"]):
        done = _cli(args, config, tmp_path)
        assert done.returncode == 251 and len(done.stderr.strip().splitlines()) == 1, done.stderr


@pytest.mark.parametrize(
    "text, key",
    [
        ("[memory]\ncap_factor = 1e308\n", "memory.cap_factor"),
        ("[memory]\nsample_interval = 9223372036854775807\n", "memory.sample_interval"),
        ("[memory]\nsample_interval = 1e-320\n", "memory.sample_interval"),
        ('[memory]\nmargin = "9223372036854775807B"\n', "memory.margin"),
        ('[memory]\nmargin = "99999T"\n', "memory.margin"),
        ("[memory]\nadmission_wait = 1e300\n", "memory.admission_wait"),
        ("[ui]\nrefresh_interval = 1e-300\n", "ui.refresh_interval"),
        ("[ui]\nhistory_minutes = 9223372036854775807\n", "ui.history_minutes"),
        ("[cores]\nheavy_threads = 9223372036854775807\n", "cores.heavy_threads"),
        ("[hooks]\nmax_running_subagents = 9223372036854775807\n", "hooks.max_running_subagents"),
        ('[[hosts]]\nname = "b"\naddress = "x"\ntimeout = 1e300\n', "hosts[b].timeout"),
    ],
)
def test_numbers_out_of_their_range_are_refused(tmp_path: Path, text: str, key: str) -> None:
    path = tmp_path / "config.toml"
    path.write_text(text)
    message = _refused(path)
    assert key in message and ("at most" in message or "at least" in message), message


def test_every_number_states_its_range_in_config_show() -> None:
    from swarmdeck.config import default_config

    config = default_config()
    numeric = {
        f"{section}.{item.name}"
        for section, cls in SECTIONS.items()
        for item in dataclasses.fields(cls)
        if get_type_hints(cls)[item.name] in (int, float, SizeSpec, SizeSpec | None)
    }
    rows = {row.key: row for row in describe_config(config)}
    assert numeric and numeric <= set(rows)
    for key in numeric:
        assert "range " in rows[key].doc, rows[key]
    assert "(range 1 to 100)" in rows["memory.cap_factor"].doc


@pytest.mark.parametrize("name", ["a\nb", "box\r2", "x" * 200, "ok\x00"])
def test_a_host_name_with_control_characters_gives_one_line(tmp_path: Path, name: str) -> None:
    path = tmp_path / "config.toml"
    escaped = name.replace("\n", "\\n").replace("\r", "\\r").replace("\x00", "\\u0000")
    path.write_text(f'[[hosts]]\nname = "{escaped}"\naddress = "x"\n')
    _refused(path)
