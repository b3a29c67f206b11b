"""The `swarmdeck` console script. `swarmdeck hook …` runs before every Bash call an agent
makes, so it goes straight to the hook's entry, which imports only what a light call uses (no
parser; typing, textual, rich and asyncssh never); any other command goes to the command line's
parser (command_line.py).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `swarmdeck` console script; returns the process exit status."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list[:1] == ["hook"] and not {"-h", "--help"} & set(args_list):
        from swarmdeck.hooks.entry import main as hook_main

        return hook_main(args_list[1:])
    from swarmdeck.cli.command_line import run_command

    return run_command(args_list, whole_process=argv is None)
