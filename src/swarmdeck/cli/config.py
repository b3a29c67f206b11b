"""`swarmdeck config show`: every key, its value and where the value came from."""

from __future__ import annotations

import argparse

from swarmdeck.cli.common import add_subcommands, example
from swarmdeck.exitcodes import ExitCode


def _add_config(sub) -> None:
    p = sub.add_parser(
        "config",
        help="the effective configuration",
        **example(
            "swarmdeck config show",
            "SWARMDECK_CONFIG=./try.toml swarmdeck config show  # check a file before using it",
        ),
    )
    inner = add_subcommands(p, "config_command")
    show = inner.add_parser(
        "show",
        help="every key, its value and where the value came from",
        **example("swarmdeck config show", "swarmdeck config show | grep '^watchdog\\.'"),
    )
    show.set_defaults(handler=_config_show)


def _config_show(args: argparse.Namespace) -> int:
    from swarmdeck.config import load_config
    from swarmdeck.status_report import print_config

    print_config(load_config())
    return ExitCode.OK


ADDERS = {
    "config": _add_config,
}
"""The subcommands this module adds, by name."""
