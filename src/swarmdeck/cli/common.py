"""What every command module shares: the parser class that reports mistakes as exit 251, and
the config and state store most commands open.

Kept free of heavy imports: `swarmdeck run` and `swarmdeck hook` start here.
"""

from __future__ import annotations

import functools
import os
import sys

# Not `from typing import TYPE_CHECKING`: importing typing costs the hook path a tenth of its
# budget, and this name is all that type checkers and linters look for.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable
    from typing import NoReturn

    Handler = Callable[[argparse.Namespace], int]


def __getattr__(name: str) -> type:
    """`ArgumentParser`, made when a command first asks for it: a plain `swarmdeck run` line
    is read without argparse (cli/run.py), so importing this module must not import it."""
    if name == "ArgumentParser":
        return _argument_parser()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@functools.cache
def _argument_parser() -> type[argparse.ArgumentParser]:
    import argparse

    from swarmdeck.errors import UsageError

    class ArgumentParser(argparse.ArgumentParser):
        """argparse that reports a usage mistake as one line and exit 251, as every error here."""

        def error(self, message: str) -> NoReturn:
            raise UsageError(f"{message} (see '{self.prog} --help')")

        def _print_message(self, message: str, file=None) -> None:
            # argparse drops a failed write of help or a version; a closed pipe must reach
            # cli.main, which ends quietly with 141 instead of 0 for output nobody read.
            if message:
                (file or sys.stderr).write(message)

        def _get_formatter(self) -> argparse.HelpFormatter:
            # argparse makes a formatter for every argument it adds (to check its metavar), and
            # each one imports shutil and asks the terminal for its width: once is enough.
            return self.formatter_class(prog=self.prog, width=help_width())

    ArgumentParser.__module__ = __name__
    return ArgumentParser


@functools.cache
def help_width() -> int:
    """The width argparse's formatter would take (shutil.get_terminal_size's columns − 2),
    found once per process and without importing shutil and its archive modules."""
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns
        except (AttributeError, ValueError, OSError):
            columns = 0
    return (columns or 80) - 2


_OPENED: list = []
"""State stores `context` opened, closed by `close_opened` unless the process ends first."""


def context():
    """The effective config and the state store every command but `hook` works with."""
    from swarmdeck.config_cache import cached_config
    from swarmdeck.state import StateStore

    config = cached_config()
    store = StateStore.open_default()
    _OPENED.append(store)
    return config, store


def close_opened() -> None:
    """Close the stores this process's commands opened (`main` does, but for a caged run)."""
    while _OPENED:
        _OPENED.pop().close()
