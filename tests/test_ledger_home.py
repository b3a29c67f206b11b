"""The jobs table has one home: no module outside swarmdeck.ledger spells a statement on it."""

from __future__ import annotations

import re
from pathlib import Path

import swarmdeck

SRC = Path(swarmdeck.__file__).parent
ON_JOBS = re.compile(r"\b(FROM|INTO|UPDATE|JOIN|TABLE)\s+jobs\b", re.IGNORECASE)


def test_only_the_ledger_package_runs_sql_on_the_jobs_table() -> None:
    outside = sorted(
        f"{path.relative_to(SRC)}:{number}"
        for path in SRC.rglob("*.py")
        if "ledger" not in path.relative_to(SRC).parts[:1]
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if ON_JOBS.search(line)
    )
    assert outside == []


def test_the_ledger_package_is_where_the_statements_are() -> None:
    inside = [path for path in (SRC / "ledger").rglob("*.py") if ON_JOBS.search(path.read_text())]
    assert {path.name for path in inside} >= {"schema.py", "rows.py", "writes.py"}
