"""Command-line parsing: each subcommand hands its arguments to the packages that do the work.

Handlers import their modules lazily, so `swarmdeck hook …`, which runs before every Bash
call an agent makes, never pays for textual, rich or asyncssh.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn

from swarmdeck import __version__
from swarmdeck.errors import SwarmdeckError, UsageError
from swarmdeck.exitcodes import ExitCode

Handler = Callable[[argparse.Namespace], int]


class ArgumentParser(argparse.ArgumentParser):
    """argparse that reports a usage mistake as one line and exit 251, as every error here."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message} (see '{self.prog} --help')")


def _context():
    """The effective config and the state store every command but `hook` works with."""
    from swarmdeck.config import load_config
    from swarmdeck.state import StateStore

    return load_config(), StateStore.open_default()


# ---- ui ---------------------------------------------------------------------------------------


def _add_ui(sub) -> None:
    p = sub.add_parser("ui", help="the control room (the default)")
    p.add_argument(
        "--readonly", action="store_true", help="hide every action that changes anything"
    )
    p.set_defaults(handler=_ui)


def _ui(args: argparse.Namespace) -> int:
    from swarmdeck.app.main import run_app

    config, store = _context()
    return run_app(config, store, readonly=getattr(args, "readonly", False))


# ---- status / probe ---------------------------------------------------------------------------


def _add_status(sub) -> None:
    p = sub.add_parser("status", help="one snapshot of everything the control room shows")
    p.add_argument("--json", action="store_true", help="print the snapshot JSON")
    p.set_defaults(handler=_status)


def _status(args: argparse.Namespace) -> int:
    from swarmdeck.probes.host import CpuSampler
    from swarmdeck.snapshot import take_snapshot

    config, store = _context()
    sampler = CpuSampler()
    sampler.prime()
    snapshot = take_snapshot(config, store, sampler)
    if args.json:
        import json

        print(json.dumps(snapshot.to_json(), indent=2))
    else:
        from swarmdeck.status_report import print_status

        print_status(snapshot)
    return ExitCode.OK


def _add_probe(sub) -> None:
    p = sub.add_parser("probe", help="this host's snapshot (what a peer runs over ssh)")
    p.add_argument("--json", action="store_true", required=True, help="print the snapshot JSON")
    p.set_defaults(handler=_probe)


def _probe(args: argparse.Namespace) -> int:
    import json

    from swarmdeck.probes.host import CpuSampler
    from swarmdeck.snapshot import take_snapshot

    config, store = _context()
    sampler = CpuSampler()
    sampler.prime()
    print(json.dumps(take_snapshot(config, store, sampler).to_json()))
    return ExitCode.OK


# ---- config -----------------------------------------------------------------------------------


def _add_config(sub) -> None:
    p = sub.add_parser("config", help="the effective configuration")
    inner = p.add_subparsers(dest="config_command", required=True, parser_class=ArgumentParser)
    show = inner.add_parser("show", help="every key, its value and where the value came from")
    show.set_defaults(handler=_config_show)


def _config_show(args: argparse.Namespace) -> int:
    from swarmdeck.config import load_config
    from swarmdeck.status_report import print_config

    print_config(load_config())
    return ExitCode.OK


# ---- parser -----------------------------------------------------------------------------------

PARSERS: list[Callable[[object], None]] = [
    _add_ui,
    _add_status,
    _add_probe,
    _add_config,
]


def build_parser() -> ArgumentParser:
    parser = ArgumentParser(
        prog="swarmdeck",
        description="A terminal control room for machines that run swarms of coding agents.",
    )
    parser.add_argument("--version", action="version", version=f"swarmdeck {__version__}")
    sub = parser.add_subparsers(dest="command", parser_class=ArgumentParser, metavar="COMMAND")
    for add in PARSERS:
        add(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `swarmdeck` console script; returns the process exit status."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    try:
        args = build_parser().parse_args(args_list)
        handler: Handler = getattr(args, "handler", _ui)
        return int(handler(args))
    except SwarmdeckError as error:
        print(f"swarmdeck: {error.message}", file=sys.stderr)
        return int(error.exit_code)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
