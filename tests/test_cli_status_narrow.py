"""`COLUMNS=80 swarmdeck status` fits 80 columns with every header word whole (the columns a
person reads last give way first), and a job that ended says how once, in its state."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from ledger_rows import add_job
from swarmdeck.state import StateStore

SWARMDECK = str(Path(sys.executable).with_name("swarmdeck"))
MIB = 1 << 20
OUTCOME = "cannot start in /work: Permission denied; nothing was run"


def status_at(width: int) -> str:
    result = subprocess.run(
        [SWARMDECK, "status"], capture_output=True, text=True, timeout=60,
        env={**os.environ, "COLUMNS": str(width)},
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def fill_ledger(store: StateStore) -> None:
    now = time.time()
    for label in ("pytest -n 8 tests", "cargo build --release"):
        add_job(store, label=label, state="done", exit_code=126, outcome=OUTCOME,
                booked=900 * MIB, cap=1800 * MIB, peak=300 * MIB, started_at=now - 80,
                ended_at=now - 20)
    add_job(store, label="integration suite", state="queued", booked=2048 * MIB)


def header_lines(text: str) -> list[str]:
    """Every table's header lines: between its top edge and the rule under the header."""
    lines, inside = [], False
    for line in text.splitlines():
        if line.startswith("┏"):
            inside = True
        elif line.startswith("┡"):
            inside = False
        elif inside:
            lines.append(line)
    return lines


def job_row_lines(text: str, label_start: str) -> list[str]:
    """The lines one job's row takes in the Jobs table, from its first line to the next row."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if label_start in line)
    end = next(i for i in range(start + 1, len(lines))
               if not lines[i].startswith("│") or lines[i].split("│")[1].strip())
    return lines[start:end]


def test_at_80_columns_the_status_fits_with_whole_headers(isolated_home: Path) -> None:
    fill_ledger(StateStore.open_default())
    text = status_at(80)
    assert all(len(line) <= 80 for line in text.splitlines()), text
    headers = header_lines(text)
    assert headers, text
    for line in headers:
        assert "…" not in line, line


def test_at_80_columns_a_failed_job_says_its_outcome_once_in_a_few_lines(
    isolated_home: Path,
) -> None:
    fill_ledger(StateStore.open_default())
    text = status_at(80)
    assert text.count("Permission") == 2, text
    row = job_row_lines(text, "pytest")
    assert len(row) <= 6, "\n".join(row)
    assert "126" in "".join(row)


def test_wide_the_status_keeps_every_column(isolated_home: Path) -> None:
    fill_ledger(StateStore.open_default())
    text = status_at(250)
    jobs = next(line for line in header_lines(text) if "label" in line)
    for label in ("id", "label", "state", "booked", "current", "peak", "cap", "cores",
                  "runtime"):
        assert label in jobs, label
