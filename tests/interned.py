"""The strings `sys.intern` is asked for: pathlib asks it for each part of each path it parses,
and a name interned anew at every refresh keeps replacing entries in the interpreter's table of
interned strings, which is reallocated whole each time its deleted entries use it up (issue 36:
the control room's resident memory stepped up with each)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def interned_names() -> Iterator[list[str]]:
    """Inside the block, each string `sys.intern` is asked for, in order."""
    names: list[str] = []
    real = sys.intern

    def noted(text: str) -> str:
        names.append(text)
        return real(text)

    sys.intern = noted
    try:
        yield names
    finally:
        sys.intern = real
