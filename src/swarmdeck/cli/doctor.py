"""`swarmdeck doctor`: what works here and what to do about the rest (swarmdeck/doctor.py)."""

from __future__ import annotations

import argparse
import sys

from swarmdeck.cli.common import example
from swarmdeck.exitcodes import ExitCode


def _add_doctor(sub) -> None:
    p = sub.add_parser(
        "doctor",
        help="what works here and what to do about the rest (exit 0 usable, 78 otherwise)",
        **example("swarmdeck doctor", "swarmdeck doctor && swarmdeck run -- make test"),
    )
    p.set_defaults(handler=_doctor)


def _doctor(args: argparse.Namespace) -> int:
    from swarmdeck.config_cache import cached_config
    from swarmdeck.doctor import examine, reasons, screen
    from swarmdeck.state import StateStore

    config = cached_config()
    store = StateStore.open_default()
    try:
        parts = examine(config, store.path)
    finally:
        store.close()
    for line in screen(parts):
        print(line, flush=True)
    why = reasons(parts)
    if why:
        print(f"swarmdeck: not usable here: {why}", file=sys.stderr)
        return ExitCode.REFUSED
    return ExitCode.OK


ADDERS = {"doctor": _add_doctor}
"""The subcommands this module adds, by name."""
