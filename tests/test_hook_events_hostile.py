"""A hook input the database cannot store as it came never blocks what comes after it.

JSON as Node writes it can hold what SQLite's `json_valid` or UTF-8 refuse: `NaN`, `Infinity`,
a number too large for a double (`1e999`), half of a surrogate pair (`JSON.stringify` of an
emoji cut in two). Each shape goes through a real `swarmdeck hook` process, light (spooled) or
heavy (recorded through the database), then a real `swarmdeck run`: the run ends 0 without a
traceback, the call is a row in a safe form, and no spool file is left behind.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from cagekit import SWARMDECK

from swarmdeck import paths
from swarmdeck.hook_events import FOLDING_PREFIX, fold, record_line
from swarmdeck.state import StateStore

SID = "7777dddd-0000-4000-8000-000000000007"
HOSTILE = {
    "nan": (b'"x": NaN', {"x": "NaN"}),
    "infinity": (b'"x": Infinity', {"x": "Infinity"}),
    "minus-infinity": (b'"x": [-Infinity]', {"x": ["-Infinity"]}),
    "1e999": (b'"x": {"big": 1e999}', {"x": {"big": "Infinity"}}),
    "lone-surrogate": (b'"x": "cut \\ud83d"', {"x": "cut \ufffd"}),
    "surrogate-key": (b'"\\udc00": 1', {"\ufffd": 1}),
    "surrogate-bytes": (b'"x": "\xed\xa0\xbd"', {"x": "\ufffd"}),
}
"""Per shape: the extra field as raw JSON, and what the stored payload holds for it."""


def _input(command: str, extra: bytes, session: str = SID) -> bytes:
    return (
        b'{"hook_event_name": "PreToolUse", "session_id": "%s", "tool_name": "Bash",'
        b' "tool_input": {"command": "%s"}, %s}' % (session.encode(), command.encode(), extra)
    )


def _hook(raw: bytes) -> None:
    done = subprocess.run([SWARMDECK, "hook", "pre-tool-use"], input=raw, capture_output=True,
                          timeout=60, check=False)
    assert done.returncode == 0 and done.stderr == b"", done.stderr


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([SWARMDECK, "run", "--", *argv], capture_output=True, text=True,
                          timeout=60, check=False)


def _payloads(store: StateStore) -> list[dict]:
    fold(store)
    with store.read() as conn:
        rows = conn.execute("SELECT payload FROM hook_events ORDER BY id").fetchall()
    return [json.loads(row["payload"]) for row in rows]


def _spool_files() -> list[str]:
    return sorted(p for p in os.listdir(paths.state_dir()) if p.startswith("hook-spool"))


@pytest.fixture
def store(own_slice: Path) -> StateStore:
    """A set-up store whose WAL is checkpointed, so a light call is spooled."""
    made = StateStore.open_default()
    made.close()
    return made


@pytest.mark.parametrize("shape", sorted(HOSTILE))
def test_a_light_call_the_database_cannot_store_as_it_came_breaks_no_later_run(
    store: StateStore, shape: str
) -> None:
    extra, stored = HOSTILE[shape]
    _hook(_input("ls before", b'"n": 1'))
    _hook(_input("ls hostile", extra))
    _hook(_input("ls after", b'"n": 2'))
    done = _run("true")
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    payloads = _payloads(store)
    assert [p["tool_input"]["command"] for p in payloads] == ["ls before", "ls hostile", "ls after"]
    assert {k: payloads[1][k] for k in stored} == stored
    assert _spool_files() == []


@pytest.mark.parametrize("shape", sorted(HOSTILE))
def test_a_heavy_call_the_database_cannot_store_as_it_came_is_recorded_safely(
    store: StateStore, shape: str
) -> None:
    # Recorded through the database, not the spool: before, the call was lost ("event not
    # recorded") and, had it been spooled, every later fold failed with it.
    extra, stored = HOSTILE[shape]
    _hook(_input("make -j8 test", extra))
    [payload] = _payloads(store)
    assert payload["tool_input"]["command"] == "make -j8 test"
    assert {k: payload[k] for k in stored} == stored


def test_a_session_id_with_half_a_surrogate_is_stored_with_a_replacement(
    store: StateStore,
) -> None:
    _hook(_input("ls", b'"n": 1', session="s-\\ud83d"))
    assert _run("true").returncode == 0
    with store.read() as conn:
        [row] = conn.execute("SELECT session_id FROM hook_events").fetchall()
    assert row["session_id"] == "s-\ufffd"


def test_a_folding_file_left_by_an_older_swarmdeck_with_a_nan_is_folded(
    store: StateStore,
) -> None:
    # What a store hit by the fault holds now: a fold that failed on every attempt left its
    # file; the next fold takes it up and every run after it works.
    folder = paths.state_dir()
    leftover = os.path.join(folder, f"{FOLDING_PREFIX}{10**19:020d}.1")
    fd = os.open(leftover, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.write(fd, record_line(_input("ls old", b'"x": NaN'), 1000.0))
    os.write(fd, record_line(_input("ls old too", b'"n": 1'), 1001.0))
    os.close(fd)
    done = _run("true")
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert [p["tool_input"]["command"] for p in _payloads(store)] == ["ls old", "ls old too"]
    assert _spool_files() == []


REFUSING_TRIGGER = """
CREATE TRIGGER refuse_poison BEFORE INSERT ON hook_events
WHEN NEW.payload LIKE '%poison%' BEGIN SELECT RAISE(ABORT, 'poison refused'); END
"""


def test_a_record_the_database_refuses_is_set_aside_and_the_others_folded(
    store: StateStore,
) -> None:
    # Whatever else a database may refuse one day (here a trigger stands for it): that one
    # record goes to the rejected file, the others are rows, and runs go on.
    with store.transaction() as conn:
        conn.execute(REFUSING_TRIGGER)
    store.close()
    _hook(_input("ls before", b'"n": 1'))
    _hook(_input("ls poison", b'"n": 2'))
    _hook(_input("ls after", b'"n": 3'))
    for _ in range(2):
        done = _run("true")
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert [p["tool_input"]["command"] for p in _payloads(store)] == ["ls before", "ls after"]
    assert _spool_files() == ["hook-spool.rejected"]
    rejected = Path(paths.state_dir(), "hook-spool.rejected").read_bytes().splitlines()
    assert len(rejected) == 1 and b"ls poison" in rejected[0]


def test_a_watch_pass_after_a_light_call_with_a_nan_folds_it_and_goes_on(
    store: StateStore,
) -> None:
    _hook(_input("ls hostile", b'"x": NaN'))
    done = subprocess.run([SWARMDECK, "watch", "--once"], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert [p["tool_input"]["command"] for p in _payloads(store)] == ["ls hostile"]
    assert _spool_files() == []


BROKEN_TRIGGER = """
CREATE TRIGGER broken_fold BEFORE INSERT ON hook_events
WHEN NEW.payload LIKE '%broken%' BEGIN INSERT INTO no_such_table VALUES (1); END
"""


def test_a_fold_the_database_fails_leaves_its_calls_for_later_and_the_run_goes_on(
    store: StateStore,
) -> None:
    # A database error while folding (a trigger that names a missing table stands for it) is
    # the database's, not one record's: the fold is undone and its files wait; the run that
    # met it records its job all the same.
    with store.transaction() as conn:
        conn.execute(BROKEN_TRIGGER)
    store.close()
    _hook(_input("ls broken", b'"n": 1'))
    done = _run("true")
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    with store.read() as conn:
        assert conn.execute("SELECT count(*) FROM hook_events").fetchone()[0] == 0
        assert [tuple(r) for r in conn.execute("SELECT state, exit_code FROM jobs")] == [
            ("done", 0)
        ]
    assert len(_spool_files()) == 1
    with store.transaction() as conn:
        conn.execute("DROP TRIGGER broken_fold")
    assert [p["tool_input"]["command"] for p in _payloads(store)] == ["ls broken"]
    assert _spool_files() == []
