"""`status --json` says when finished jobs were left out, and `--all` lists every row."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from ledger_rows import insert_job
from swarmdeck.probes.memory_book import RECENT_FINISHED
from swarmdeck.state import StateStore

SWARMDECK = Path(sys.executable).parent / "swarmdeck"


def _status(*args: str) -> dict:
    done = subprocess.run([str(SWARMDECK), "status", "--json", *args], capture_output=True,
                          text=True, timeout=60, check=True, env=dict(os.environ))
    return json.loads(done.stdout)


def _finished(count: int) -> None:
    store = StateStore.open_default()
    with store.transaction() as conn:
        for n in range(count):
            insert_job(conn, label=f"done-{n}", state="done", exit_code=0, outcome="ok",
                       ended_at=1.0 + n)
    store.close()


def test_up_to_the_limit_nothing_is_truncated(isolated_home: Path) -> None:
    _finished(RECENT_FINISHED)
    data = _status()
    assert len(data["jobs"]) == RECENT_FINISHED and data["jobs_truncated"] is False


def test_past_the_limit_the_json_says_so_and_all_gives_every_row(isolated_home: Path) -> None:
    _finished(RECENT_FINISHED + 5)
    data = _status()
    assert len(data["jobs"]) == RECENT_FINISHED and data["jobs_truncated"] is True
    every = _status("--all")
    assert len(every["jobs"]) == RECENT_FINISHED + 5 and every["jobs_truncated"] is False


def _status_text(*args: str) -> str:
    env = {key: value for key, value in os.environ.items() if key != "COLUMNS"}
    done = subprocess.run([str(SWARMDECK), "status", *args], capture_output=True, text=True,
                          timeout=60, check=True, env=env)
    return done.stdout


def test_past_the_limit_the_text_says_how_many_are_not_shown(isolated_home: Path) -> None:
    _finished(RECENT_FINISHED + 6)
    text = _status_text()
    assert text.count("done-") == RECENT_FINISHED
    lines = text.splitlines()
    said = [n for n, line in enumerate(lines) if "older finished jobs not shown" in line]
    assert [lines[n] for n in said] == ["6 older finished jobs not shown: status --all"]
    assert lines[said[0] - 1].startswith("└"), "the line comes right under the Jobs table"
    every = _status_text("--all")
    assert every.count("done-") == RECENT_FINISHED + 6 and "not shown" not in every


def test_one_left_out_is_said_in_the_singular(isolated_home: Path) -> None:
    _finished(RECENT_FINISHED + 1)
    assert "1 older finished job not shown: status --all" in _status_text()


def test_up_to_the_limit_the_text_says_nothing_of_older_jobs(isolated_home: Path) -> None:
    _finished(RECENT_FINISHED)
    assert "not shown" not in _status_text()
