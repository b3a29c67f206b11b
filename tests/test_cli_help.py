"""Every command's `--help` ends with an example a person can copy: `example:` and at least one
line that runs that very command."""

from __future__ import annotations

import contextlib
import io

import pytest

from swarmdeck.cli import main
from swarmdeck.cli.command_line import COMMANDS


def _help(argv: list[str]) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as ended:
        main(argv)
    assert ended.value.code == 0
    return out.getvalue()


def examples(text: str) -> list[str]:
    """The lines of the help's `example:` block (indented lines right after it)."""
    lines = text.splitlines()
    if "example:" not in lines:
        return []
    block = []
    for line in lines[lines.index("example:") + 1 :]:
        if not line.startswith("  "):
            break
        block.append(line.strip())
    return block


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_command_help_shows_an_example_of_itself(command: str) -> None:
    shown = examples(_help([command, "--help"]))
    assert any(f"swarmdeck {command}" in line for line in shown), (command, shown)


def test_the_top_level_help_shows_examples_of_the_first_commands() -> None:
    shown = examples(_help(["--help"]))
    assert "swarmdeck demo" in " ".join(shown) and any("swarmdeck run" in line for line in shown)


def test_a_help_without_an_example_block_is_caught() -> None:
    assert examples("usage: swarmdeck x\n\noptions:\n  -h, --help\n") == []
    assert examples("usage: x\n\nexample:\n  swarmdeck x --y\nmore\n") == ["swarmdeck x --y"]


def actions_of(command: str) -> list[str]:
    """The subcommands `swarmdeck COMMAND --help` lists (`lock acquire`, `peer check`, …)."""
    import argparse

    from swarmdeck.cli.command_line import build_parser

    parser = build_parser(command)
    [group] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    inner = [a for a in group.choices[command]._actions
             if isinstance(a, argparse._SubParsersAction)]
    return [choice.dest for action in inner for choice in action._get_subactions()]


GROUPED = [(command, action) for command in COMMANDS for action in actions_of(command)]


def test_the_command_groups_are_found() -> None:
    for command, action in [("config", "show"), ("lock", "acquire"), ("lock", "cleanup"),
                            ("hooks", "install"), ("peer", "check"), ("peer", "attach")]:
        assert (command, action) in GROUPED


@pytest.mark.parametrize(("command", "action"), GROUPED, ids=[f"{c} {a}" for c, a in GROUPED])
def test_every_subcommand_help_shows_an_example_of_itself(command: str, action: str) -> None:
    shown = examples(_help([command, action, "--help"]))
    assert any(f"swarmdeck {command} {action}" in line for line in shown), shown


@pytest.mark.parametrize(("command", "action"), GROUPED, ids=[f"{c} {a}" for c, a in GROUPED])
def test_every_subcommand_usage_names_it_as_it_is_typed(command: str, action: str) -> None:
    usage = _help([command, action, "--help"]).splitlines()[0]
    assert usage.startswith(f"usage: swarmdeck {command} {action} "), usage


def test_peer_help_leaves_out_the_commands_only_a_driving_host_runs() -> None:
    text = _help(["peer", "--help"])
    assert "remote-start" not in text and "remote-stop" not in text
    assert actions_of("peer") == ["check", "run", "attach", "cleanup"]
    assert _help(["peer", "remote-stop", "--help"]).startswith("usage: swarmdeck peer remote-stop")


@pytest.mark.parametrize("argv", [["peer", "run", "--help"], ["peer", "run", "big2", "--help"]])
def test_peer_run_help_describes_each_option(argv: list[str]) -> None:
    text = _help(argv)
    for option, says in [
        ("--cap SIZE", "memory cap"), ("--label L", "Jobs panel"), ("--threads N", "threads"),
        ("--fetch PATH", "bring back"), ("--detach", "driver follows"),
        ("--untracked", "untracked"), ("--accept-toolchain", "toolchains"),
    ]:
        [line] = [line for line in text.splitlines() if line.strip().startswith(option)]
        assert says in line, (option, line)
    assert "rest" not in text


def test_run_help_lists_every_exit_code_the_readme_gives_run() -> None:
    from test_readme import table

    text = " ".join(_help(["run", "--help"]).split("exit codes:", 1)[1].split())
    for code, meaning in table("code"):
        if code.isdigit() and "`dispatch`" not in meaning:
            assert f"{code} " in text, code
    assert "241" not in text and "244" not in text


def test_every_example_block_is_written_by_the_one_function_that_lays_it_out() -> None:
    from pathlib import Path

    import swarmdeck.cli

    folder = Path(swarmdeck.cli.__file__).parent
    by_hand = [
        path.name for path in sorted(folder.glob("*.py"))
        if path.name != "common.py" and "example:" in path.read_text()
    ]
    assert by_hand == []


def test_dispatch_help_lists_its_own_exit_codes_after_runs() -> None:
    text = " ".join(_help(["dispatch", "--help"]).split("exit codes:", 1)[1].split())
    assert text.startswith("those of swarmdeck run, or 241 ")
    assert "244 " in text


def test_lock_acquire_help_lists_the_codes_it_exits_with() -> None:
    text = " ".join(_help(["lock", "acquire", "--help"]).split("exit codes:", 1)[1].split())
    assert text.startswith("0 once it holds the lock, or 78 ")
    for code, says in [("78", "--no-wait"), ("251", "folder"), ("253", "--timeout")]:
        assert f"{code} " in text and says in text.split(f"{code} ", 1)[1].split(",")[0], code


@pytest.mark.parametrize("command", ["ui", "demo"])
def test_the_control_rooms_help_lists_the_codes_it_exits_with(command: str) -> None:
    text = " ".join(_help([command, "--help"]).split("exit codes:", 1)[1].split())
    assert text.startswith("0 once quit (q, ")
    for code, says in [("251", "no terminal"), ("129", "terminal went away")]:
        assert f"{code} " in text and says in text.split(f"{code} ", 1)[1], code
