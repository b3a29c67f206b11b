"""SQLite as swarmdeck uses it: the C module `_sqlite3`, without the `sqlite3` package around it.

The package is that module plus `sqlite3/dbapi2.py`, which imports `datetime` (a 100 KB module
run in full before its C twin replaces it) and `collections.abc` only to register the default
date adapters and converters. They are deprecated since Python 3.12 and nothing here uses them:
every time in the state file is a float of epoch seconds, and no connection asks for
`detect_types`. `swarmdeck run` and the hooks start once per job and per agent command, and on
Python 3.11 that import alone costs a run about 4 ms, as much as all of its checks.

The names are the package's own objects (`sqlite3.Connection is _sqlite3.Connection`), so a
test or a caller that imports `sqlite3` shares connections, rows and errors with this module.
"""

from _sqlite3 import (
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
