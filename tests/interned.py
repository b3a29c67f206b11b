"""The strings `sys.intern` is asked for: pathlib asks it for each part of each path it parses,
and a name interned anew at every refresh keeps replacing entries in the interpreter's table of
interned strings, which is reallocated whole each time its deleted entries use it up (issue 36:
the control room's resident memory stepped up with each)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def interned_names(*, added_only: bool = False) -> Iterator[list[str]]:
    """Inside the block, each string `sys.intern` is asked for, in order; with `added_only`,
    only those it added to the table (a name that is interned already, held by a live path,
    takes no new entry: `sys.intern` then hands back the string it holds, not the one given)."""
    names: list[str] = []
    real = sys.intern

    def noted(text: str) -> str:
        if not added_only:
            names.append(text)
            return real(text)
        # A copy is asked for, not `text`: pathlib hands in the interned string itself for a
        # part it copies from another path, and `sys.intern` returns that as it is.
        copy = text[:1] + text[1:]
        held = real(copy)
        if held is copy and len(text) > 1:
            names.append(text)
        return held

    sys.intern = noted
    try:
        yield names
    finally:
        sys.intern = real
