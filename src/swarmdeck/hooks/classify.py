"""Heavy or light: whether a shell command matches one of the configured heavy patterns.

Each pattern is compiled only when the command holds one of its necessary literals
(prefilter.py), so a light command usually costs a few substring tests and no regex at all.

A command longer than CLASSIFY_LIMIT is judged by its head: it is heavy when a pattern matches
within its first 8 KiB. The default patterns are linear in the text, so all twelve of them on
that head stay well within the hook's 50 ms for a command of any size, even on 2 shared cores;
a config's own pattern that backtracks is still cut by the hook's deadline.
"""

from __future__ import annotations

import os

from swarmdeck.hooks.settings import HookSettings
from swarmdeck.hooks.shell_words import RESERVED_LEADS, RUNNERS, WRAPPERS

CLASSIFY_LIMIT = 8 * 1024
"""Characters of a command the patterns are tried on; the rest of a longer one is not read."""
WORDS_LIMIT = 4096
"""Characters split into words to name the workload: the program comes first."""


class HeavyMatch:
    """Why a command is heavy: the pattern and the part of the command it matched."""

    __slots__ = ("label", "matched", "pattern")

    def __init__(self, pattern: str, matched: str, label: str) -> None:
        self.pattern = pattern
        self.matched = matched
        self.label = label
        """A short name for the workload, for `--label`."""

    def __repr__(self) -> str:
        return f"HeavyMatch({self.pattern!r}, {self.matched!r}, {self.label!r})"


def may_match(text: str, literals: tuple[str, ...] | None) -> bool:
    """False only when `text` holds none of the literals, so the pattern cannot match."""
    return literals is None or any(literal in text for literal in literals)


def heavy_match(command: str, settings: HookSettings) -> HeavyMatch | None:
    """The first heavy pattern the command's head matches, or None for a light command."""
    command = command[:CLASSIFY_LIMIT]
    for pattern, literals in zip(settings.heavy_patterns, settings.literals, strict=True):
        if not may_match(command, literals):
            continue
        import re  # only past the literals: a light command is decided without re's import

        try:
            found = re.search(pattern, command)
        except re.error:
            continue
        if found is not None:
            return HeavyMatch(pattern, found.group(0), workload_label(found.group(0), command))
    return None


def workload_label(matched: str, command: str) -> str:
    """The program the heavy part runs, by name: `pytest`, `make`, `cargo`…, past the wrappers
    and runners the shell parser walks through (shell_words.WRAPPERS and RUNNERS)."""
    words = _words(matched[:WORDS_LIMIT]) + _words(command[:WORDS_LIMIT])
    subcommand_at = -1
    for index, word in enumerate(words):
        name = os.path.basename(word)
        subcommands = RUNNERS.get(name)
        if subcommands is not None:
            following = words[index + 1] if index + 1 < len(words) else ""
            if not subcommands:
                continue
            if following in subcommands:
                subcommand_at = index + 1
                continue
        if (
            index == subcommand_at
            or not name
            or "=" in word
            or name in WRAPPERS
            or name in RESERVED_LEADS
            or name.startswith(("-", "python"))
            or name[0].isdigit()
            or name in {";", "&&", "||", "|", "&", "(", ")"}
        ):
            continue
        return name[:40]
    return "job"


def _words(text: str) -> list[str]:
    import shlex

    try:
        return shlex.split(text, comments=False, posix=True)
    except ValueError:
        return text.split()
