"""Necessary literals of a regex: strings of which one must occur wherever the regex matches.

Compiling the default heavy-command patterns costs about 10 ms, several times the whole budget
of a hook for a light command. A command that contains none of a pattern's necessary literals
cannot match it, so most commands are found light by a few substring tests, and a pattern is
compiled only when one of its literals is present. The literals are worked out once per config
(they are cached with the hook settings), never on the hook's light path; classify.py
uses them.
"""

from __future__ import annotations

import re
from re import _constants as sre  # type: ignore[attr-defined]
from re import _parser as sre_parse  # type: ignore[attr-defined]
from typing import Any

MAX_ALTERNATIVES = 32
MAX_CLASS = 8

_ZERO_WIDTH = {sre.AT, sre.ASSERT, sre.ASSERT_NOT}


def necessary_literals(pattern: str) -> tuple[str, ...] | None:
    """Strings one of which occurs in every text `pattern` finds (re.search); None if unknown.

    Unknown is the safe answer: the pattern is then always compiled and searched.
    """
    try:
        parsed = sre_parse.parse(pattern)
    except (re.error, RecursionError, OverflowError):
        return None
    if parsed.state.flags & sre.SRE_FLAG_IGNORECASE:
        return None
    found = _required(list(parsed))
    return tuple(sorted(found)) if found else None


def _strength(options: set[str]) -> tuple[int, int]:
    return (min(len(o) for o in options), -len(options))


class _Runs:
    """Adjacent fixed text while walking a sequence; the best finished run is kept."""

    def __init__(self) -> None:
        self.current: set[str] = {""}
        self.best: set[str] | None = None

    def consider(self, options: set[str] | None) -> None:
        if not options or not all(options):
            return
        if self.best is None or _strength(options) > _strength(self.best):
            self.best = set(options)

    def extend(self, options: set[str]) -> None:
        if len(self.current) * len(options) > MAX_ALTERNATIVES:
            self.close()
            self.consider(options)
            return
        self.current = {a + b for a in self.current for b in options}

    def close(self) -> None:
        self.consider(self.current)
        self.current = {""}


def _required(items: list[tuple[Any, Any]]) -> set[str] | None:
    runs = _Runs()
    for op, av in items:
        if op is sre.LITERAL:
            runs.extend({chr(av)})
        elif op in _ZERO_WIDTH:
            continue
        elif op is sre.IN:
            chars = _class_chars(av)
            if chars is None:
                runs.close()
            else:
                runs.extend(chars)
        elif op is sre.SUBPATTERN:
            _group, add_flags, _del_flags, sub = av
            if add_flags & sre.SRE_FLAG_IGNORECASE:
                runs.close()
                continue
            _follow(runs, list(sub))
        elif op is sre.BRANCH:
            _follow(runs, [(op, av)])
        elif op in (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT):
            low, _high, sub = av
            runs.close()
            if low >= 1:
                runs.consider(_required(list(sub)))
        else:
            runs.close()
    runs.close()
    return runs.best


def _follow(runs: _Runs, items: list[tuple[Any, Any]]) -> None:
    """A group or alternation: part of the run when it is exact text, else its own candidate."""
    exact = _exact(items)
    if exact is not None:
        runs.extend(exact)
        return
    runs.close()
    if len(items) == 1 and items[0][0] is sre.BRANCH:
        union: set[str] = set()
        for branch in items[0][1][1]:
            required = _required(list(branch))
            if not required:
                return
            union |= required
        runs.consider(union)
    else:
        runs.consider(_required(items))


def _exact(items: list[tuple[Any, Any]]) -> set[str] | None:
    """Every text a literal-only sequence can be (few alternatives), or None."""
    texts = {""}
    for op, av in items:
        if op is sre.LITERAL:
            options: set[str] | None = {chr(av)}
        elif op is sre.IN:
            options = _class_chars(av)
        elif op is sre.BRANCH:
            options = set()
            for branch in av[1]:
                sub = _exact(list(branch))
                if sub is None:
                    return None
                options |= sub
        elif op is sre.SUBPATTERN and not av[1] & sre.SRE_FLAG_IGNORECASE:
            options = _exact(list(av[3]))
        else:
            return None
        if options is None or len(texts) * len(options) > MAX_ALTERNATIVES:
            return None
        texts = {a + b for a in texts for b in options}
    return texts


def _class_chars(items: list[tuple[Any, Any]]) -> set[str] | None:
    if len(items) > MAX_CLASS or any(op is not sre.LITERAL for op, _ in items):
        return None
    return {chr(av) for _, av in items}
