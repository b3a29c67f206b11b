"""Every command's `--help` ends with an example a person can copy: `example:` and at least one
line that runs that very command."""

from __future__ import annotations

import contextlib
import io

import pytest

from swarmdeck.cli import COMMANDS, main


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


def test_a_help_without_an_example_block_is_caught() -> None:
    assert examples("usage: swarmdeck x\n\noptions:\n  -h, --help\n") == []
    assert examples("usage: x\n\nexample:\n  swarmdeck x --y\nmore\n") == ["swarmdeck x --y"]
