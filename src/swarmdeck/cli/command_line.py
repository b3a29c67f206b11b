"""The command line of every command but `hook`: each subcommand hands its arguments to the
packages that do the work.

One module per command group adds its subcommands (`ADDERS`); `COMMANDS` says which module
adds which, so building the parser for the command about to run imports only its module.
Handlers import their own modules lazily.
"""

from __future__ import annotations

import os
import sys
from typing import NoReturn

from swarmdeck import __version__
from swarmdeck.cli.common import ArgumentParser, Handler, VersionAction, example
from swarmdeck.cli.output import (
    OutputFailed,
    flushed,
    guard_streams,
    output_failed,
    reader_gone,
    restore_streams,
)
from swarmdeck.errors import SwarmdeckError, UsageError

COMMANDS: dict[str, str] = {
    "ui": "ui",
    "serve": "serve",
    "status": "status",
    "doctor": "doctor",
    "probe": "status",
    "config": "config",
    "run": "run",
    "gpu-run": "run",
    "dispatch": "dispatch",
    "peer": "peer",
    "lock": "lock",
    "watch": "watch",
    "kills": "kills",
    "approve": "kills",
    "deny": "kills",
    "alerts": "alerts",
    "guards": "guards",
    "hook": "hooks",
    "hooks": "hooks",
    "demo": "demo",
    "handover": "handover",
    "selftest": "selftest",
}
"""Every subcommand, in the order help lists them, and the module of `swarmdeck.cli` adding it."""


def _adder(command: str):
    import importlib

    return importlib.import_module(f"swarmdeck.cli.{COMMANDS[command]}").ADDERS[command]


def build_parser(command: str | None = None) -> ArgumentParser:
    """The command line's parser; given the subcommand about to run, only that one is built.

    Every caged run starts here, and building every subcommand's parser costs it more the more
    subcommands there are. Anything else (no command, --help, --version, a mistyped command)
    gets the whole parser, so help and "invalid choice" still list every command.
    """
    parser = ArgumentParser(
        prog="swarmdeck",
        description="A terminal control room for machines that run swarms of coding agents.",
        **example(
            "swarmdeck                        the control room (same as: swarmdeck ui)",
            "swarmdeck demo                   the control room on a scene of its own",
            "swarmdeck run --cap 8G -- make   a job in a memory cage",
            "swarmdeck status                 what the control room shows, as text",
            "swarmdeck COMMAND --help         one command's options and examples",
        ),
    )
    parser.add_argument("--version", action=VersionAction, version=f"swarmdeck {__version__}")
    sub = parser.add_subparsers(dest="command", parser_class=ArgumentParser, metavar="COMMAND")
    for name in [command] if command in COMMANDS else COMMANDS:
        _adder(name)(sub)
    return parser


def _parse(args_list: list[str]):
    """The parsed command line; words no parser took are named with the help of the command
    they were given to, not the top level's."""
    if args_list and not args_list[0].startswith("-") and args_list[0] not in COMMANDS:
        raise _unknown_command(args_list[0])
    parser = build_parser(args_list[0] if args_list else None)
    args, extra = parser.parse_known_args(args_list)
    if extra:
        # The command's name from the line itself: `run`, `dispatch` and `gpu-run` keep the
        # words of the job under the same attribute name, `command`.
        words = [args_list[0]] if args_list[0] in COMMANDS else []
        for name in ("config_command", "lock_command", "hooks_command", "peer_command"):
            word = getattr(args, name, None)
            if isinstance(word, str):
                words.append(word)
        where = " ".join(["swarmdeck", *words])
        raise UsageError(f"unrecognized arguments: {' '.join(extra)} (see '{where} --help')")
    return args


def _unknown_command(word: str) -> Exception:
    """A mistyped command's one line: the command it is close to, else the list of them."""
    import difflib

    close = difflib.get_close_matches(word, COMMANDS, n=1, cutoff=0.6)
    if close:
        return UsageError(
            f"unknown command {word!r}; did you mean {close[0]!r}? (see 'swarmdeck --help')"
        )
    known = ", ".join(map(repr, COMMANDS))
    see = "(see 'swarmdeck --help')"
    return UsageError(f"unknown command {word!r}; the commands are {known} {see}")


def run_command(args_list: list[str], whole_process: bool) -> int:
    """Run the command line `args_list`; returns the process exit status.

    As the whole process (the console script), a command marked `ends_process` (`run`) ends
    the process once its output is flushed, like a hook: nothing is left to tear down (the
    job's tree and cage are gone, its row is written), and the interpreter's teardown of every
    imported module would slow each caged run. Its state store stays open to the end: closing
    the last connection would checkpoint the WAL into the state file, and the next runner would
    verify it again.
    Any other caller gets the stores the command opened closed.
    """
    ends_process = False
    streams = guard_streams()
    try:
        args = _parse(args_list)
        _refuse_empty_places()
        ends_process = whole_process and getattr(args, "ends_process", False)
        args.whole_process = ends_process
        handler: Handler | None = getattr(args, "handler", None)
        if handler is None:
            handler = build_parser("ui").parse_args(["ui"]).handler
        code = int(handler(args))
        sys.stdout.flush()
    except SystemExit as ended:
        # --help and --version end here; what they printed may still be in the buffer.
        if ended.code in (0, None):
            try:
                if not flushed():
                    return reader_gone()
            except OutputFailed as failure:
                return output_failed(failure)
        raise
    except BrokenPipeError:
        return reader_gone()
    except OutputFailed as failure:
        return output_failed(failure)
    except SwarmdeckError as error:
        print(f"swarmdeck: {error.message}", file=sys.stderr)
        return int(error.exit_code)
    except KeyboardInterrupt:
        return 130
    finally:
        common = sys.modules.get("swarmdeck.cli.common")
        if common is not None and not ends_process:
            common.close_opened()
        if not ends_process:
            restore_streams(streams)
    if ends_process:
        _end_process(code)
    return code


def _refuse_empty_places() -> None:
    """Refuse a place variable set but empty before any command reads it (see paths.py).

    Here, past parsing, so that --help still answers; and for every command alike, so that
    none of them falls back to the real state while another refuses.
    """
    from swarmdeck.paths import empty_place_refusal

    refusal = empty_place_refusal()
    if refusal is not None:
        raise UsageError(refusal)


def _end_process(code: int) -> NoReturn:
    """Flush what was printed and end the process at once, skipping the interpreter's teardown."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, OutputFailed):
            # A closed pipe or stream: its reader went away; the exit status still tells.
            continue
    os._exit(code)
