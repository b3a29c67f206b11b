"""What every command module shares: the parser class that reports mistakes as exit 251, and
the config and state store most commands open.

The parser is argparse's, changed through its public methods only: a mistake is one line and
exit 251, help and version that cannot be written reach the caller (argparse drops a failed
write), and a group's unknown subcommand is told the ones its help lists.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, NoReturn

from swarmdeck.errors import UsageError

if TYPE_CHECKING:
    from swarmdeck.exitcodes import ExitCode

Handler = Callable[[argparse.Namespace], int]
"""What a subcommand's `handler` default is: it runs the command and gives its exit status."""


class ArgumentParser(argparse.ArgumentParser):
    """argparse that reports a usage mistake as one line and exit 251, as every error here."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        self.known_options: set[str] = set()
        """Every option string this parser takes: a word like one that is none is a mistake."""
        self.subcommands: argparse.Action | None = None
        """The group's subcommands (`add_subcommands`), None for a parser without."""
        self.unlisted: set[str] = set()
        """Subcommands left out of the group's help and of what a mistake lists."""
        self.words: list[str] = []
        """The words this parser was last given (a subcommand's too), for naming a mistake."""
        # argparse makes a formatter for every argument it adds (to check its metavar), and
        # each asks the terminal for its width: once per process is enough (help_width).
        formatter = kwargs.get("formatter_class", argparse.HelpFormatter)
        kwargs["formatter_class"] = functools.partial(formatter, width=help_width())
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]

    def add_argument(self, *args: object, **kwargs: object) -> argparse.Action:
        action = super().add_argument(*args, **kwargs)  # type: ignore[arg-type]
        self.known_options.update(action.option_strings)
        return action

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        self.words = list(sys.argv[1:] if args is None else args)
        word = self.words[0] if self.words else "-"
        group = self.subcommands
        if group is not None and not word.startswith("-") and word not in group.choices:  # type: ignore[operator]
            shown = ", ".join(repr(name) for name in listed_subcommands(self))
            self.error(f"argument {group.metavar}: invalid choice: {word!r} (choose from {shown})")
        return super().parse_known_args(args, namespace)

    def error(self, message: str) -> NoReturn:
        # A mistyped option also leaves what it was meant to come before missing: the
        # option is the mistake to name, not the arguments argparse then finds absent.
        unknown = self._unknown_options() if message.startswith("the following") else []
        if unknown:
            message = f"unrecognized arguments: {' '.join(unknown)}"
        elif message.endswith(": expected one argument"):
            message += self._dash_value_hint(message)
        raise UsageError(f"{message} (see '{self.prog} --help')")

    def print_help(self, file: object = None) -> None:
        # A failed write (a closed pipe) must reach cli.main, which ends quietly with 141
        # instead of 0 for output nobody read.
        (file or sys.stdout).write(self.format_help())  # type: ignore[attr-defined]

    def print_usage(self, file: object = None) -> None:
        (file or sys.stdout).write(self.format_usage())  # type: ignore[attr-defined]

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        if message:
            sys.stderr.write(message)
        raise SystemExit(status)

    def _dash_value_hint(self, message: str) -> str:
        """For `--cap -5M`: a value starting with '-' was read as an option."""
        option = message.removeprefix("argument ").split(":", 1)[0].split("/")[-1]
        words = self.words
        if option in words and words.index(option) + 1 < len(words):
            value = words[words.index(option) + 1]
            if value.startswith("-") and value != "--":
                return f" ({value} reads as an option: write {option}={value})"
        return ""

    def _unknown_options(self) -> list[str]:
        """The words before `--` that look like options this parser does not know."""
        before = self.words[: self.words.index("--")] if "--" in self.words else self.words
        return [
            word for word in before
            if word.startswith("-") and len(word) > 1
            and word.split("=", 1)[0] not in self.known_options
            and not word[1:].replace(".", "", 1).isdigit()
        ]


class VersionAction(argparse.Action):
    """`--version`: print the version and end, the write's failure reaching cli.main (as help's)."""

    def __init__(self, option_strings: list[str], version: str, dest: str = "version",
                 help: str = "show the version and exit") -> None:
        super().__init__(option_strings, dest=argparse.SUPPRESS, nargs=0, help=help)
        self.version = version

    def __call__(self, parser: argparse.ArgumentParser, *_args: object) -> None:
        sys.stdout.write(self.version + "\n")
        parser.exit()


def example(*lines: str, before: str = "", after: str = "") -> dict[str, object]:
    """The parser arguments that end a command's help with its example lines, as they are
    written: `before` is a paragraph shown above them (the events `hook` answers), `after` one
    below them (the exit codes, a note)."""
    block = "example:\n" + "\n".join(f"  {line}" for line in lines)
    paragraphs = (part.rstrip("\n") for part in (before, block, after) if part)
    return {
        "epilog": "\n\n".join(paragraphs) + "\n",
        "formatter_class": argparse.RawDescriptionHelpFormatter,
    }


def exit_codes(
    own: str, codes: tuple[ExitCode, ...], meanings: dict[ExitCode, str] | None = None
) -> str:
    """The help's paragraph of what a command exits with: `own` (the codes it passes on, in
    words), or swarmdeck's own `codes`, each with its meaning (`meanings` when the command
    says them in its own words)."""
    import textwrap

    from swarmdeck.exitcodes import MEANING, codes_text

    text = codes_text(codes, meanings or MEANING)
    return textwrap.fill(f"exit codes: {own}, or {text}.", width=84)


def flag_type(read: Callable[[str], object]) -> Callable[[str], object]:
    """`read` (durations.seconds_or_zero, …) as an argparse type: the ValueError it raises
    already says what is wrong and what to give, where argparse would say only "invalid
    value", so it becomes argparse's ArgumentTypeError, told after the flag's name."""

    def typed(text: str) -> object:
        try:
            return read(text)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    typed.__name__ = read.__name__
    return typed


def thread_count(text: str) -> int:
    """--threads as argparse reads it: a whole number, or one line in the words the range
    check uses (run_request.thread_count), imported only when a parser is built."""
    from swarmdeck.actions.run_request import thread_count as read

    return read(text)


def given_path(text: str) -> str:
    """A PATH or DIR as given, unless it is empty: "" would be read as this folder, which a
    person who meant one would have written as "."."""
    if not text:
        raise ValueError("an empty path names no folder: give one, like . for this folder")
    return text


def session_id(text: str) -> str:
    """A Claude Code session id as given, unless it is empty: "" would be read as no session
    chosen, which means any session."""
    if not text.strip():
        raise ValueError(
            "an empty session id names no session: give one, or leave the flag out for"
            " $CLAUDE_CODE_SESSION_ID"
        )
    return text


MAX_ID = (1 << 63) - 1
"""The largest id a row of the state store may have (SQLite's largest integer)."""


def record_id(text: str) -> int:
    """The id a flag gives (a job, an alert, a kill request): a whole number from 1 to MAX_ID,
    the ids the state store hands out; else ValueError saying so, where one over MAX_ID would
    end in SQLite's OverflowError."""
    try:
        number = int(text)
    except ValueError:
        number = 0
    if not 1 <= number <= MAX_ID:
        raise ValueError(
            f"{text or repr(text)} is no id swarmdeck gives: ids are whole numbers from 1,"
            " as its lists show them"
        )
    return number


def add_subcommands(parser: ArgumentParser, dest: str) -> argparse.Action:
    """The subcommands of a command group (`lock acquire`, `peer check`): each one's usage and
    mistakes name it as it is typed (`swarmdeck peer check`), whatever usage the group shows,
    and the group given alone says which there are. Add each with `add_parser(name, help=…)`;
    one only swarmdeck itself runs with `add_unlisted`."""
    inner = parser.add_subparsers(
        dest=dest, prog=parser.prog, parser_class=ArgumentParser, metavar="SUBCOMMAND"
    )
    parser.subcommands = inner
    parser.set_defaults(handler=functools.partial(_no_subcommand, parser))
    return inner


def add_unlisted(parser: ArgumentParser, name: str, **kwargs: object) -> ArgumentParser:
    """A subcommand of `parser`'s group left out of its help and of what a mistake lists (a
    command only swarmdeck itself runs, as a peer's `remote-start`)."""
    assert parser.subcommands is not None, "add_subcommands first"
    parser.unlisted.add(name)
    return parser.subcommands.add_parser(name, **kwargs)  # type: ignore[attr-defined]


def listed_subcommands(parser: ArgumentParser) -> list[str]:
    """The subcommands a group's help lists, in its order."""
    choices = parser.subcommands.choices if parser.subcommands is not None else None
    return [name for name in choices or () if name not in parser.unlisted]


def _no_subcommand(parser: ArgumentParser, _args: object) -> int:
    raise UsageError(
        # Said after "swarmdeck: ", so the group is named without the program again.
        f"{parser.prog.removeprefix('swarmdeck ')} needs a subcommand: choose one of"
        f" {', '.join(listed_subcommands(parser))}"
        f" (see '{parser.prog} --help')"
    )


_help_width: int | None = None
"""help_width's answer, once found."""


def help_width() -> int:
    """The width argparse's formatter would take (shutil.get_terminal_size's columns − 2),
    found once per process and without importing shutil and its archive modules."""
    global _help_width
    if _help_width is None:
        _help_width = _terminal_columns() - 2
    return _help_width


def _terminal_columns() -> int:
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


def need_terminal(instead: str = "`swarmdeck status` prints the same facts") -> None:
    """UsageError unless stdin and stdout are a terminal: the control room draws on one and
    reads its keys, and without one (an agent's Bash tool, a pipe, cron) it would write escape
    sequences into the pipe and wait for keys that never come. `instead` says what to run
    without one."""
    if not all(_is_terminal(stream) for stream in (sys.stdin, sys.stdout)):
        raise UsageError(f"the control room needs a terminal; {instead}")


def _is_terminal(stream: object) -> bool:
    try:
        return bool(stream is not None and stream.isatty())  # type: ignore[attr-defined]
    except ValueError:
        # A stream closed already is no terminal.
        return False


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
