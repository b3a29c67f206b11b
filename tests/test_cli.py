"""The command line as a user meets it: real `swarmdeck` processes, exit codes, one-line errors."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from swarmdeck.cli.command_line import COMMANDS, build_parser
from swarmdeck.snapshot import SNAPSHOT_KEYS

SWARMDECK = str(Path(sys.executable).with_name("swarmdeck"))


def swarmdeck(*args: str, columns: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run the real command piped; `COLUMNS` is set only when `columns` is given."""
    env = {key: value for key, value in os.environ.items() if key != "COLUMNS"}
    if columns is not None:
        env["COLUMNS"] = columns
    return subprocess.run(
        [SWARMDECK, *args], capture_output=True, text=True, timeout=60, env=env
    )


def test_status_json_has_every_snapshot_key() -> None:
    result = swarmdeck("status", "--json")
    assert result.returncode == 0, result.stderr
    snapshot = json.loads(result.stdout)
    assert tuple(snapshot) == (*SNAPSHOT_KEYS, "guards")
    (host,) = snapshot["hosts"]
    assert host["local"] is True
    assert host["mem_total"] > host["slice_cap"] > 0
    assert host["busy_cores"] is not None


def test_probe_json_is_one_line_of_the_same_snapshot() -> None:
    result = swarmdeck("probe", "--json")
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("\n") == 1
    assert set(json.loads(result.stdout)) == set(SNAPSHOT_KEYS)


def test_status_prints_tables() -> None:
    result = swarmdeck("status")
    assert result.returncode == 0, result.stderr
    assert "Hosts" in result.stdout
    assert "slice cap" in result.stdout


def test_piped_status_is_as_wide_as_its_content_not_squeezed_to_80() -> None:
    result = swarmdeck("status")
    assert result.returncode == 0, result.stderr
    assert "…" not in result.stdout
    header = next(line for line in result.stdout.splitlines() if "cores busy" in line)
    assert all(label in header for label in ("threads free", "slice cap", "memory room"))
    assert max(len(line) for line in result.stdout.splitlines()) < 1000  # not padded out


def test_piped_status_keeps_to_columns_when_set() -> None:
    result = swarmdeck("status", columns="100")
    assert result.returncode == 0, result.stderr
    assert max(len(line) for line in result.stdout.splitlines()) <= 100


def test_unknown_command_is_one_line_and_exit_251() -> None:
    result = swarmdeck("frobnicate")
    assert result.returncode == 251
    assert result.stderr.count("\n") == 1
    assert "Traceback" not in result.stderr


def test_an_unknown_command_is_told_every_command_there_is() -> None:
    result = swarmdeck("frobnicate")
    assert all(f"'{command}'" in result.stderr for command in COMMANDS), result.stderr


def test_every_adder_registers_the_command_it_is_listed_for() -> None:
    # build_parser(command) builds only the adder listed for the command: a mismatch would leave
    # that command unparseable.
    for command in COMMANDS:
        (sub,) = [
            a for a in build_parser(command)._actions if isinstance(a, argparse._SubParsersAction)
        ]
        assert list(sub.choices) == [command]


def test_a_command_parses_the_same_without_its_siblings() -> None:
    for argv in (
        ["run", "--cap", "8G", "--label", "x", "--", "make", "-j8"],
        ["lock", "acquire", "/tmp/w", "--no-wait"],
        ["config", "show"],
    ):
        assert build_parser(argv[0]).parse_args(argv) == build_parser().parse_args(argv)


def test_bad_config_is_one_line_naming_file_key_and_line(isolated_home: Path) -> None:
    config = isolated_home / "config.toml"
    config.write_text('[memory]\nreserve = "2G"\ncap_factr = 2\n')
    result = swarmdeck("status")
    assert result.returncode == 251
    assert result.stderr.count("\n") == 1
    assert str(config) in result.stderr
    assert "cap_factr" in result.stderr
    assert "3" in result.stderr


def test_config_show_names_where_each_value_came_from(isolated_home: Path) -> None:
    config = isolated_home / "config.toml"
    config.write_text("[ui]\nrefresh_interval = 5.0\n")
    result = subprocess.run(
        [SWARMDECK, "config", "show"], capture_output=True, text=True, timeout=60,
        env={**os.environ, "COLUMNS": "250"},
    )
    assert result.returncode == 0, result.stderr
    line = next(row for row in result.stdout.splitlines() if "ui.refresh_interval" in row)
    assert "5" in line
    assert f"{config}:2" in line


def test_a_foreign_state_file_is_reported_and_left_untouched(isolated_home: Path) -> None:
    state = isolated_home / "state"
    state.mkdir()
    db = state / "state.db"
    db.write_bytes(b"not a database at all\n" * 10)
    before = db.read_bytes()
    result = swarmdeck("status")
    assert result.returncode == 251
    assert str(db) in result.stderr
    assert "Traceback" not in result.stderr
    assert db.read_bytes() == before


def test_config_show_without_a_file_names_the_path_it_checked(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SWARMDECK_CONFIG")
    result = swarmdeck("config", "show")
    assert result.returncode == 0, result.stderr
    first = result.stdout.splitlines()[0]
    checked = isolated_home / "xdg-config" / "swarmdeck" / "config.toml"
    assert str(checked) in first and "no config file" in first


def test_config_show_prints_each_heavy_entry_on_its_own_line() -> None:
    from swarmdeck.config import default_config

    result = swarmdeck("config", "show")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("hooks.heavy = ["))
    patterns = default_config().hooks.heavy
    shown = lines[start + 1 : start + 1 + len(patterns)]
    assert len(shown) == len(patterns)
    # Each line is one TOML string, as it would be written in the file.
    assert [tomllib.loads("x = " + line.strip().rstrip(","))["x"] for line in shown] == list(
        patterns
    )
    assert lines[start + 1 + len(patterns)] == "]"
    assert len(lines[start]) < 200


def test_a_mistyped_option_is_named_rather_than_the_arguments_it_left_missing() -> None:
    for argv in (["peer", "run", "--bogus"], ["lock", "acquire", "--bogus"], ["probe", "--bogus"]):
        result = swarmdeck(*argv)
        assert result.returncode == 251, argv
        assert result.stderr.startswith("swarmdeck: unrecognized arguments: --bogus (see"), argv
    missing = swarmdeck("lock", "acquire")
    assert "the following arguments are required: PATH" in missing.stderr
    dashed = swarmdeck("run", "--cap", "-5M", "--", "true")
    assert dashed.returncode == 251
    assert "(-5M reads as an option: write --cap=-5M)" in dashed.stderr


def test_a_stray_word_is_named_with_the_help_of_the_command_it_was_given_to() -> None:
    for argv, where in (
        (["status", "--bogus"], "swarmdeck status --help"),
        (["config", "show", "extra"], "swarmdeck config show --help"),
        (["--bogus"], "swarmdeck --help"),
        (["run", "--bogus", "--", "true"], "swarmdeck run --help"),
        (["dispatch", "--bogus", "--", "true"], "swarmdeck dispatch --help"),
        (["gpu-run", "--bogus", "--", "true"], "swarmdeck gpu-run --help"),
        (["peer", "check", "--bogus", "box2"], "swarmdeck peer check --help"),
    ):
        result = swarmdeck(*argv)
        assert result.returncode == 251
        assert result.stderr.count("\n") == 1 and f"(see '{where}')" in result.stderr, argv


def test_demo_seconds_without_no_ui_is_refused_in_one_line_before_any_scene() -> None:
    result = swarmdeck("demo", "--seconds", "5")
    assert result.returncode == 251, result.stderr
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1 and "--no-ui" in result.stderr, result.stderr


def test_dispatch_of_a_long_job_says_its_expected_runtime_apart_from_the_limit(
    tmp_path: Path,
) -> None:
    result = subprocess.run(
        [SWARMDECK, "dispatch", "--estimate-wall", "10000", "--", "touch", str(tmp_path / "ran")],
        capture_output=True, text=True, timeout=60, cwd=tmp_path,
    )
    assert result.returncode == 244, result.stderr
    assert "expected to run 2h46m, over the 2h limit" in result.stderr, result.stderr
    assert not (tmp_path / "ran").exists()


def test_a_subcommands_mistake_names_it_as_it_is_typed() -> None:
    for argv, where in [
        (["peer", "check"], "swarmdeck peer check"),
        (["peer", "attach", "big2"], "swarmdeck peer attach"),
        (["peer", "cleanup"], "swarmdeck peer cleanup"),
        (["lock", "acquire"], "swarmdeck lock acquire"),
    ]:
        result = swarmdeck(*argv)
        assert result.returncode == 251, result.stderr
        assert result.stderr.count("\n") == 1, result.stderr
        assert f"(see '{where} --help')" in result.stderr, result.stderr


def test_a_group_without_its_subcommand_is_told_which_there_are() -> None:
    for command, actions in [
        ("config", "show"),
        ("lock", "acquire, release, show, claim, cleanup"),
        ("hooks", "install"),
        ("peer", "check, run, attach, cleanup"),
    ]:
        result = swarmdeck(command)
        assert result.returncode == 251, result.stderr
        assert result.stderr == (
            f"swarmdeck: {command} needs a subcommand: choose one of {actions}"
            f" (see 'swarmdeck {command} --help')\n"
        )


def test_an_unknown_subcommand_is_told_the_ones_a_person_may_use() -> None:
    for command in ("config", "lock", "hooks", "peer"):
        result = swarmdeck(command, "frob")
        assert result.returncode == 251, result.stderr
        assert result.stderr.count("\n") == 1, result.stderr
        assert "_command" not in result.stderr and "remote-" not in result.stderr
        assert "invalid choice: 'frob'" in result.stderr


def test_status_json_never_shows_a_negative_room_on_a_cap_of_0() -> None:
    """A reserve over the whole machine leaves a slice cap of 0, and a margin over what is
    available leaves the machine nothing: both rooms read 0."""
    Path(os.environ["SWARMDECK_CONFIG"]).write_text(
        '[memory]\nslice = "swarmdeck-test-room"\nreserve = "64T"\nmargin = "64T"\n'
    )
    result = swarmdeck("status", "--json")
    assert result.returncode == 0, result.stderr
    (host,) = json.loads(result.stdout)["hosts"]
    assert host["slice_cap"] == 0
    assert (host["room"], host["machine_room"]) == (0, 0)
