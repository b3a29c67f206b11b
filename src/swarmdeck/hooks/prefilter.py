"""Necessary literals of a regex: strings of which one must occur wherever the regex matches.

Compiling the default heavy-command patterns costs several times the whole budget of a hook
for a light command. A command that contains none of a pattern's necessary literals cannot
match it, so most commands are found light by a few substring tests, and a pattern is compiled
only when one of its literals is present (classify.py). The literals are worked out once per
config, cached with the hook settings, never on the hook's light path.
"""

from __future__ import annotations

import re
from typing import Any

MAX_ALTERNATIVES = 32
MAX_CLASS = 8

# The parser's nodes: tuples that compare as re's own do (a nested sequence, _Items, only with
# itself), as that decides which prefix alternatives share.
LITERAL = "literal"  # (LITERAL, char)
IN = "in"  # (IN, [(LITERAL, char) | (OTHER, what) | (NEGATE,), ...]): a character class
AT = "at"  # (AT, which): ^ $ \A \Z \b \B
ASSERT = "assert"  # (ASSERT, _Items): a lookahead or lookbehind
SUBPATTERN = "subpattern"  # (SUBPATTERN, (group, add_flags, del_flags, _Items))
BRANCH = "branch"  # (BRANCH, (None, [_Items, ...]))
REPEAT = "repeat"  # (REPEAT, (kind, low, high, _Items))
NEGATE = "negate"
OTHER = "other"  # (OTHER, what): anything else; no literal text is read from it

_ZERO_WIDTH = {AT, ASSERT}
_ESCAPED_TEXT = {"a": "\a", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}
_FLAG_LETTERS = "aiLmsux"
_DIGITS = "0123456789"
_OCTAL = "01234567"
_OCTAL_PAIRS = {a + b for a in _OCTAL for b in _OCTAL}
_HEX = "0123456789abcdefABCDEF"
_HEX_DIGITS = {"x": 2, "u": 4, "U": 8}
"""How many hex digits follow each of these escapes."""


class _Items(list):  # type: ignore[type-arg]
    """A sequence of nodes inside another node: equal only to itself, as re's SubPattern."""

    __eq__ = object.__eq__  # type: ignore[assignment]
    __hash__ = object.__hash__  # type: ignore[assignment]


class _Unknown(Exception):
    """The pattern uses what this parser leaves alone: the answer is None (unknown)."""


def necessary_literals(pattern: str) -> tuple[str, ...] | None:
    """Strings one of which occurs in every text `pattern` finds (re.search); None if unknown.

    Unknown is the safe answer: the pattern is then always compiled and searched.

    The pattern is read by a small parser here (re has no public syntax tree) that shapes it as
    re's own parser does: plain groups spliced in, a prefix common to alternatives taken out,
    one-character alternatives made a class. What it leaves alone (`\\N{...}`, a verbose or
    case-blind pattern) can only make the answer weaker, never wrong.
    """
    try:
        flags = re.compile(pattern).flags
    except (re.error, RecursionError, OverflowError):
        return None
    if flags & (re.IGNORECASE | re.VERBOSE):
        return None
    try:
        items = _Parser(pattern).parse()
    except (_Unknown, IndexError, RecursionError):
        return None
    found = _required(items)
    return tuple(sorted(found)) if found else None


class _Parser:
    """A pattern that re.compile accepted, as the nodes above."""

    def __init__(self, pattern: str) -> None:
        self.text = pattern
        self.at = 0
        self.groups = 0

    def peek(self) -> str | None:
        return self.text[self.at] if self.at < len(self.text) else None

    def take(self) -> str:
        char = self.text[self.at]
        self.at += 1
        return char

    def taken(self, char: str) -> bool:
        if self.peek() == char:
            self.at += 1
            return True
        return False

    def parse(self) -> list[Any]:
        items = self.alternatives()
        if self.at != len(self.text):
            raise _Unknown
        return items

    def alternatives(self) -> list[Any]:
        """A `|`-separated list, shaped as re's parser shapes it (`_parse_sub`)."""
        branches = [self.sequence()]
        while self.taken("|"):
            branches.append(self.sequence())
        if len(branches) == 1:
            return branches[0]
        items: list[Any] = _Items()
        while all(branches) and all(branch[0] == branches[0][0] for branch in branches):
            prefix = branches[0][0]
            for branch in branches:
                del branch[0]
            items.append(prefix)
        chars: list[Any] = []
        for branch in branches:
            if len(branch) != 1:
                break
            if branch[0][0] == LITERAL:
                chars.append(branch[0])
            elif branch[0][0] == IN and branch[0][1][0] != (NEGATE,):
                chars.extend(branch[0][1])
            else:
                break
        else:
            items.append((IN, list(dict.fromkeys(chars))))
            return items
        items.append((BRANCH, (None, branches)))
        return items

    def sequence(self) -> list[Any]:
        items: list[Any] = _Items()
        while (char := self.peek()) is not None and char not in "|)":
            self.take()
            if char in "*+?{":
                if char == "{":
                    bounds = self.bounds()
                    if bounds is None:
                        items.append((LITERAL, "{"))
                        continue
                    low, high = bounds
                else:
                    low, high = {"*": (0, None), "+": (1, None), "?": (0, 1)}[char]
                kind = "min" if self.taken("?") else "possessive" if self.taken("+") else "max"
                item = _Items(items[-1:])
                if item and item[0][0] == SUBPATTERN:
                    group, add_flags, del_flags, inner = item[0][1]
                    if group is None and not add_flags and not del_flags:
                        item = inner
                items[-1:] = [(REPEAT, (kind, low, high, item))]
            elif char == "\\":
                items.append(self.escape())
            elif char == "[":
                items.append(self.char_class())
            elif char == "(":
                item = self.group()
                if item is not None:
                    items.append(item)
            elif char in "^$":
                items.append((AT, char))
            elif char == ".":
                items.append((OTHER, char))
            else:
                items.append((LITERAL, char))
        # As re's parser ends a sequence: plain (?:...) groups are spliced in.
        for at in reversed(range(len(items))):
            if items[at][0] == SUBPATTERN:
                group, add_flags, del_flags, inner = items[at][1]
                if group is None and not add_flags and not del_flags:
                    items[at : at + 1] = inner
        return items

    def bounds(self) -> tuple[int, int | None] | None:
        """`{m,n}` after its `{` as re reads it, or None (the `{` is text) with nothing taken."""
        start = self.at
        if self.peek() == "}":
            return None
        low = self.digits()
        high = self.digits() if self.taken(",") else low
        if not self.taken("}"):
            self.at = start
            return None
        return (int(low) if low else 0, int(high) if high else None)

    def digits(self) -> str:
        return self.run(_DIGITS, len(self.text))

    def next_in(self, chars: str) -> bool:
        char = self.peek()
        return char is not None and char in chars

    def escape(self) -> tuple[Any, ...]:
        """The node of `\\c` outside a class (its backslash taken)."""
        char = self.take()
        if char in "AbBZ":
            return (AT, char)
        if char in "123456789":
            # A group reference, unless three octal digits (re's own rule).
            number = char + self.run(_DIGITS, 1)
            if number in _OCTAL_PAIRS and self.next_in(_OCTAL):
                return (LITERAL, chr(int(number + self.take(), 8)))
            return (OTHER, "\\" + number)
        return self.character(char)

    def character(self, char: str) -> tuple[Any, ...]:
        """The node of an escape that stands for one character, or a class (its `\\c` taken)."""
        if char in _ESCAPED_TEXT:
            return (LITERAL, _ESCAPED_TEXT[char])
        if char in _HEX_DIGITS:
            return (LITERAL, chr(int(self.run(_HEX, _HEX_DIGITS[char]), 16)))
        if char == "0":
            return (LITERAL, chr(int("0" + self.run(_OCTAL, 2), 8)))
        if char in _OCTAL:
            return (LITERAL, chr(int(char + self.run(_OCTAL, 2), 8)))
        if char.isascii() and char.isalnum():
            # \d \s \w and their negations, \N{...}.
            if char == "N":
                while self.take() != "}":
                    pass
            return (OTHER, "\\" + char)
        return (LITERAL, char)

    def run(self, allowed: str, most: int) -> str:
        """Up to `most` characters of `allowed`, taken."""
        start = self.at
        while self.at - start < most and self.next_in(allowed):
            self.take()
        return self.text[start : self.at]

    def char_class(self) -> tuple[Any, ...]:
        """A `[...]` class (its `[` taken), as re reads it: a single character is a literal."""
        negate = self.taken("^")
        members: list[Any] = []
        first = True
        while True:
            char = self.take()
            if char == "]" and not first:
                break
            first = False
            member = self.class_member(char)
            if self.peek() == "-":
                self.take()
                if self.peek() == "]":
                    members += [member, (LITERAL, "-")]
                    self.take()
                    break
                member = (OTHER, (member, self.class_member(self.take())))  # a range
            members.append(member)
        members = list(dict.fromkeys(members))
        if len(members) == 1 and members[0][0] == LITERAL:
            return (OTHER, ("not", members[0][1])) if negate else members[0]
        return (IN, [(NEGATE,), *members] if negate else members)

    def class_member(self, char: str) -> tuple[Any, ...]:
        if char != "\\":
            return (LITERAL, char)
        char = self.take()
        return (LITERAL, "\b") if char == "b" else self.character(char)

    def group(self) -> tuple[Any, ...] | None:
        """A group (its `(` taken); None for a comment."""
        if not self.taken("?"):
            self.groups += 1
            return (SUBPATTERN, (self.groups, "", "", self.closed()))
        char = self.take()
        if char == ">":
            return (OTHER, self.closed())  # atomic: re's optimiser gives no text from it
        if char == "(":
            # (?(id)yes|no): text only one branch may hold.
            while self.take() != ")":
                pass
            return (OTHER, self.closed())
        if char == ":":
            return (SUBPATTERN, (None, "", "", self.closed()))
        if char == "#":
            while self.take() != ")":
                if self.text[self.at - 1] == "\\":
                    self.take()
            return None
        if char in "=!" or (char == "<" and self.peek() in ("=", "!")):
            if char == "<":
                self.take()
            return (ASSERT, self.closed())
        if char == "P" and self.taken("<"):
            while self.take() != ">":
                pass
            self.groups += 1
            return (SUBPATTERN, (self.groups, "", "", self.closed()))
        if char == "P" and self.taken("="):
            start = self.at
            while self.take() != ")":
                pass
            return (OTHER, ("ref", self.text[start : self.at - 1]))
        if char in _FLAG_LETTERS or char == "-":
            self.at -= 1
            return self.flagged()
        raise _Unknown

    def flagged(self) -> tuple[Any, ...] | None:
        """`(?flags)` at the start, or `(?add-del:...)`, after the `(?`."""
        add = self.flag_letters()
        removed = self.flag_letters() if self.taken("-") else ""
        if self.taken(")"):
            return None  # global flags: read from the compiled pattern
        if not self.taken(":"):
            raise _Unknown
        if "x" in add:
            raise _Unknown
        return (SUBPATTERN, (None, add, removed, self.closed()))

    def flag_letters(self) -> str:
        return self.run(_FLAG_LETTERS, len(self.text))

    def closed(self) -> list[Any]:
        items = self.alternatives()
        if not self.taken(")"):
            raise _Unknown
        return items


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


def _required(items: list[tuple[Any, ...]]) -> set[str] | None:
    runs = _Runs()
    for op, *rest in items:
        av = rest[0] if rest else None
        if op == LITERAL:
            runs.extend({av})
        elif op in _ZERO_WIDTH:
            continue
        elif op == IN:
            chars = _class_chars(av)
            if chars is None:
                runs.close()
            else:
                runs.extend(chars)
        elif op == SUBPATTERN:
            _group, add_flags, _del_flags, sub = av
            if "i" in add_flags:
                runs.close()
                continue
            _follow(runs, list(sub))
        elif op == BRANCH:
            _follow(runs, [(op, av)])
        elif op == REPEAT:
            _kind, low, _high, sub = av
            runs.close()
            if low >= 1:
                runs.consider(_required(list(sub)))
        else:
            runs.close()
    runs.close()
    return runs.best


def _follow(runs: _Runs, items: list[tuple[Any, ...]]) -> None:
    """A group or alternation: part of the run when it is exact text, else its own candidate."""
    exact = _exact(items)
    if exact is not None:
        runs.extend(exact)
        return
    runs.close()
    if len(items) == 1 and items[0][0] == BRANCH:
        union: set[str] = set()
        for branch in items[0][1][1]:
            required = _required(list(branch))
            if not required:
                return
            union |= required
        runs.consider(union)
    else:
        runs.consider(_required(items))


def _exact(items: list[tuple[Any, ...]]) -> set[str] | None:
    """Every text a literal-only sequence can be (few alternatives), or None."""
    texts = {""}
    for op, *rest in items:
        av = rest[0] if rest else None
        if op == LITERAL:
            options: set[str] | None = {av}
        elif op == IN:
            options = _class_chars(av)
        elif op == BRANCH:
            options = set()
            for branch in av[1]:
                sub = _exact(list(branch))
                if sub is None:
                    return None
                options |= sub
        elif op == SUBPATTERN and "i" not in av[1]:
            options = _exact(list(av[3]))
        else:
            return None
        if options is None or len(texts) * len(options) > MAX_ALTERNATIVES:
            return None
        texts = {a + b for a in texts for b in options}
    return texts


def _class_chars(items: list[tuple[Any, ...]]) -> set[str] | None:
    if len(items) > MAX_CLASS or any(item[0] != LITERAL for item in items):
        return None
    return {item[1] for item in items}
