"""`swarmdeck dispatch`: run a command on the first host with room for it."""

from __future__ import annotations

import argparse

from swarmdeck.cli.common import context, example, exit_codes, flag_type
from swarmdeck.durations import seconds_above_zero, seconds_or_zero
from swarmdeck.exitcodes import DISPATCH_CODES


def _add_dispatch(sub) -> None:
    p = sub.add_parser(
        "dispatch",
        help="run a command on the first host it fits on (this one, then the peers)",
        usage="swarmdeck dispatch [--gpu] [--estimate-wall S] [--label L] [--wait S] -- CMD...",
        **example(
            "swarmdeck dispatch --label tests -- pytest -n 8",
            "swarmdeck dispatch --gpu --estimate-wall 3600 -- python train.py",
            after=exit_codes("those of swarmdeck run", DISPATCH_CODES),
        ),
    )
    p.add_argument("--gpu", action="store_true", help="the job needs a GPU")
    p.add_argument(
        "--estimate-wall",
        type=flag_type(seconds_above_zero),
        metavar="S",
        help="seconds it is expected to run",
    )
    p.add_argument("--label", metavar="L", help="name shown in the Jobs panel")
    p.add_argument(
        "--wait",
        type=flag_type(seconds_or_zero),
        metavar="S",
        help="seconds to wait for a host with room",
    )
    p.add_argument("command", nargs=argparse.REMAINDER, help="the command, after --")
    p.set_defaults(handler=_dispatch, ends_process=True)


def _dispatch(args: argparse.Namespace) -> int:
    from swarmdeck.actions.dispatch import DispatchRequest, dispatch

    command = list(args.command)
    if command[:1] == ["--"]:
        command = command[1:]
    request = DispatchRequest(
        argv=command, gpu=args.gpu, estimate_wall=args.estimate_wall, label=args.label,
        wait=args.wait,
    )
    config, store = context()
    try:
        return dispatch(config, store, request)
    finally:
        store.close()


ADDERS = {"dispatch": _add_dispatch}
"""The subcommands this module adds, by name."""
