"""`swarmdeck ui`: the control room."""

from __future__ import annotations

import argparse

from swarmdeck.cli.common import context, example, exit_codes, need_terminal
from swarmdeck.exitcodes import CONTROL_ROOM_CODES


def _add_ui(sub) -> None:
    p = sub.add_parser(
        "ui",
        help="the control room (the default)",
        **example(
            "swarmdeck ui             # the same as plain 'swarmdeck'; ? lists the keys, q quits",
            "swarmdeck ui --readonly  # watch only: every action refuses",
            after=exit_codes(
                "0 once quit (q, or SIGTERM)", tuple(CONTROL_ROOM_CODES), CONTROL_ROOM_CODES
            ),
        ),
    )
    p.add_argument(
        "--readonly", action="store_true", help="hide every action that changes anything"
    )
    p.set_defaults(handler=_ui)


def _ui(args: argparse.Namespace) -> int:
    need_terminal()
    from swarmdeck.app.main import run_app

    config, store = context()
    return run_app(config, store, readonly=getattr(args, "readonly", False))


ADDERS = {
    "ui": _add_ui,
}
"""The subcommands this module adds, by name."""
