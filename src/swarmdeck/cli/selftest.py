"""`swarmdeck selftest`: prove, on this machine, that each guard holds and can fail."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys

from swarmdeck.cli.common import example, exit_codes
from swarmdeck.exitcodes import ExitCode


def _add_selftest(sub) -> None:
    p = sub.add_parser(
        "selftest",
        help="prove each guard here, in a sandbox of its own (--breaks: and that it can fail)",
        **example(
            "swarmdeck selftest                 every cell, clean: each guard holds",
            "swarmdeck selftest --breaks        and once per break switch: each can go red",
            "swarmdeck selftest --cell own-cap --json",
            after=exit_codes(
                "0 when every cell held (a skipped cell says why), 1 when one did not",
                (ExitCode.USAGE,),
            ),
        ),
    )
    p.add_argument("--json", action="store_true", help="the report as JSON")
    p.add_argument(
        "--cell", action="append", metavar="NAME", help="run only this cell (may repeat)"
    )
    p.add_argument(
        "--breaks",
        action="store_true",
        help="then once per break switch: its cells must go red, every other stay green",
    )
    p.set_defaults(handler=_selftest)


def _stop(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt


def _selftest(args: argparse.Namespace) -> int:
    from swarmdeck.breaks import BREAK_VARIABLE, MARKER_VARIABLE
    from swarmdeck.errors import UsageError
    from swarmdeck.selftest.every_cell import all_cells
    from swarmdeck.selftest.table import report_text, run_selftest

    cells = all_cells()
    unknown = [name for name in args.cell or [] if name not in cells]
    if unknown:
        raise UsageError(
            f"no selftest cell named {unknown[0]!r}: the cells are {', '.join(cells)}"
        )

    def progress(result) -> None:
        if not args.json:
            where = f" [{result.switch}]" if result.switch else ""
            print(f"  {result.cell}{where}: {result.result}", file=sys.stderr, flush=True)

    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _stop)
    # The loopback peer runs its commands in this process's environment: a switch set around
    # the selftest must not reach them (it would only be refused there, in a line of output).
    for name in (BREAK_VARIABLE, MARKER_VARIABLE):
        os.environ.pop(name, None)
    report = run_selftest(args.cell, args.breaks, progress=progress)
    if args.json:
        print(json.dumps(report.to_json(), indent=2))
    else:
        print(report_text(report))
    return 0 if report.ok else 1


ADDERS = {"selftest": _add_selftest}
"""The subcommands this module adds, by name."""
