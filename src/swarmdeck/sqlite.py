"""SQLite as swarmdeck uses it: the C module `_sqlite3`, without the `sqlite3` package around it.

The package is that module plus `sqlite3/dbapi2.py`, which imports `datetime` (a 100 KB module
run in full before its C twin replaces it) and `collections.abc` only to register the default
date adapters and converters. They are deprecated since Python 3.12 and nothing here uses them:
every time in the state file is a float of epoch seconds, and no connection asks for
`detect_types`. `swarmdeck run` and the hooks start once per job and per agent command, and on
Python 3.11 that import alone costs a run about 4 ms, as much as all of its checks.

`_sqlite3` itself imports `functools` when it is first imported, for one name: `lru_cache`,
which each connection calls once to build its cache of prepared statements. `functools` imports
`collections`, `operator`, `keyword`, `reprlib` and `types`, about 3 ms of a run's start that
buys nothing else. So where neither module is imported yet, `_sqlite3` is imported against a
module named `functools` that holds only `lru_cache`, built on the same C cache the real one
returns (`_functools._lru_cache_wrapper`); the stand-in leaves `sys.modules` as soon as
`_sqlite3` has taken the name, so any later `import functools` gets the real module.

The names are the package's own objects (`sqlite3.Connection is _sqlite3.Connection`), so a
test or a caller that imports `sqlite3` shares connections, rows and errors with this module.
"""

import sys


def _lru_cache(maxsize: int | None = 128, typed: bool = False):  # type: ignore[no-untyped-def]
    """`functools.lru_cache(maxsize)` as `_sqlite3` calls it: the same C cache, whose
    `cache_info()` (which `_sqlite3` never asks for) gives a plain tuple."""
    from _functools import _lru_cache_wrapper

    def decorating(function):  # type: ignore[no-untyped-def]
        return _lru_cache_wrapper(function, maxsize, typed, _cache_info)

    return decorating


def _cache_info(*counts: int | None) -> tuple[int | None, ...]:
    return counts


def _import_sqlite3() -> None:
    """Import `_sqlite3`, with `functools` standing in as the module docstring says when
    neither is imported yet."""
    if "_sqlite3" in sys.modules or "functools" in sys.modules:
        return
    stand_in = type(sys)("functools", "`lru_cache` alone, while `_sqlite3` is imported")
    stand_in.lru_cache = _lru_cache  # type: ignore[attr-defined]
    sys.modules["functools"] = stand_in
    try:
        import _sqlite3  # noqa: F401 (imported for its module state; the names come below)
    finally:
        if sys.modules.get("functools") is stand_in:
            del sys.modules["functools"]


_import_sqlite3()

from _sqlite3 import (  # noqa: E402 (after the import above, which must come first)
    Connection,
    Cursor,
    DatabaseError,
    Error,
    IntegrityError,
    OperationalError,
    Row,
    complete_statement,
    connect,
)

__all__ = [
    "Connection",
    "Cursor",
    "DatabaseError",
    "Error",
    "IntegrityError",
    "OperationalError",
    "Row",
    "complete_statement",
    "connect",
]
