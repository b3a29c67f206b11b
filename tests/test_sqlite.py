"""SQLite through its C module: the stand-in for functools that _sqlite3 is imported against
leaves nothing behind, and the statement cache it builds works as functools' own."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import sys
from swarmdeck import sqlite
print("functools" in sys.modules, "collections" in sys.modules)
conn = sqlite.connect(":memory:", cached_statements=8)
conn.execute("CREATE TABLE t (n INTEGER)")
for n in range(200):
    conn.execute(f"INSERT INTO t VALUES ({n % 20})")
    conn.execute("INSERT INTO t VALUES (?)", (n,))
print(conn.execute("SELECT COUNT(*), SUM(n) FROM t").fetchone())
import functools
print(functools.lru_cache.__module__, hasattr(functools, "partial"), "collections" in sys.modules)
"""


def test_sqlite_comes_without_functools_and_leaves_the_real_one_to_import() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60, check=True
    )
    before, rows, after = done.stdout.splitlines()
    assert before == "False False"
    assert rows == f"(400, {sum(n % 20 for n in range(200)) + sum(range(200))})"
    assert after == "functools True True"


PRE_IMPORTED = """
import sys
import functools
from swarmdeck import sqlite
import sqlite3
print(sys.modules["functools"] is functools, sqlite.Connection is sqlite3.Connection)
"""


def test_where_functools_is_imported_already_sqlite_uses_it() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PRE_IMPORTED], capture_output=True, text=True,
        timeout=60, check=True,
    )
    assert done.stdout.split() == ["True", "True"]
