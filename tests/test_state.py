"""Tests for the state store, on real SQLite files and real concurrent processes."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from swarmdeck import cache_settle, state
from swarmdeck.errors import StateError
from swarmdeck.exitcodes import ExitCode
from swarmdeck.state import (
    APPLICATION_ID,
    Migration,
    StateStore,
    file_uri,
    latest_version,
    schema,
    verify,
)

# The version-1 contract others code against, column order included.
SCHEMA_V1 = {
    "jobs": [
        "id", "label", "host", "fingerprint", "argv", "cwd", "state", "pid", "start_ticks",
        "runner_pid", "runner_start_ticks", "booked", "cap", "admitted_via", "oom_score_adj",
        "threads", "cgroup", "created_at", "started_at", "ended_at", "exit_code", "outcome",
        "peak", "kernel_peak", "hit_ceiling", "output_path", "serial_marker_path", "detached",
        "timeout",
    ],
    "peaks": [
        "fingerprint", "job_id", "peak", "hit_ceiling", "cap", "duration", "outcome",
        "recorded_at",
    ],
    "alerts": [
        "id", "key", "level", "source", "host", "message", "created_at", "last_seen_at", "count",
        "acknowledged_at", "resolved_at",
    ],
    "findings": [
        "id", "key", "rule", "subject", "severity", "message", "first_seen_at", "last_seen_at",
        "count", "acknowledged_at", "resolved_at",
    ],
    "kill_requests": [
        "id", "job_id", "host", "pid", "start_ticks", "user", "command", "reason", "finding_key",
        "state", "requested_at", "decided_at", "decided_by", "result",
    ],
    "dispatches": ["id", "argv", "host", "reason", "job_id", "created_at", "exit_code"],
    "hook_events": [
        "id", "event", "session_id", "agent_id", "tool_name", "cwd", "payload", "received_at",
    ],
}  # fmt: skip

V1 = schema.MIGRATIONS[0]


def untouched_evidence(path: Path) -> tuple[str, str | None, list[str]]:
    """What must not change when a file is refused: its bytes, its WAL, and its siblings."""
    wal = path.with_name(path.name + "-wal")
    return (
        hashlib.sha256(path.read_bytes()).hexdigest(),
        hashlib.sha256(wal.read_bytes()).hexdigest() if wal.exists() else None,
        sorted(p.name for p in path.parent.iterdir()),
    )


def table_columns(conn: sqlite3.Connection, table: str) -> list[str]:
    return [row["name"] for row in conn.execute(f"PRAGMA table_info({table})")]


def closed_store_with_rows(path: Path, rows: int) -> None:
    """A real swarmdeck database, fully checkpointed and closed, so only the main file is left."""
    store = StateStore(path)
    with store.transaction() as conn:
        conn.executemany(
            "INSERT INTO hook_events (event, session_id, payload) VALUES (?, ?, ?)",
            [
                ("PreToolUse", f"s{i % 7}", f'{{"n": {i}, "pad": "{"x" * 400}"}}')
                for i in range(rows)
            ],
        )
    store.close()
    assert not path.with_name(path.name + "-wal").exists()


def run_python(code: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", code, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def start_together(procs: list[subprocess.Popen[str]], gate: Path, timeout: float = 30) -> None:
    """Wait until every worker printed 'ready', then open the gate they all poll."""
    for proc in procs:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.strip() == "ready", proc.stderr.read() if proc.stderr else line
    gate.touch()
    for proc in procs:
        proc.wait(timeout=timeout)
        assert proc.returncode == 0, proc.stderr.read() if proc.stderr else proc.returncode


# ---------------------------------------------------------------- schema and connections


def test_fresh_database_has_latest_version_and_every_contract_table_and_column(tmp_path):
    store = StateStore(tmp_path / "deep" / "folder" / "state.db")

    assert store.schema_version() == latest_version()
    with store.read() as conn:
        for table, columns in SCHEMA_V1.items():
            assert table_columns(conn, table)[: len(columns)] == columns, table
        assert conn.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
        assert conn.execute("PRAGMA user_version").fetchone()[0] == latest_version()
        meta = dict(conn.execute("SELECT key, value FROM swarmdeck_meta").fetchall())
    assert meta["application"] == "swarmdeck"
    assert meta["schema_version"] == str(latest_version())


def test_connection_is_wal_autocommit_with_rows_by_name_and_a_busy_timeout(tmp_path):
    store = StateStore(tmp_path / "state.db")
    conn = store.connect()

    assert conn.isolation_level is None
    assert conn.row_factory is sqlite3.Row
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == 30_000
    assert store.connect() is conn


def test_defaults_fill_times_and_flags_and_json_columns_reject_non_json(tmp_path):
    store = StateStore(tmp_path / "state.db")
    before = state.now()
    with store.transaction() as conn:
        job_id = conn.execute(
            "INSERT INTO jobs (state, argv) VALUES ('queued', '[\"make\", \"test\"]')"
        ).lastrowid
    with store.read() as conn:
        job = conn.execute("SELECT * FROM jobs WHERE id = ?", (job_id,)).fetchone()
    assert before - 1 <= job["created_at"] <= state.now() + 1
    assert (job["hit_ceiling"], job["detached"]) == (0, 0)

    with pytest.raises(sqlite3.IntegrityError), store.transaction() as conn:
        conn.execute("INSERT INTO jobs (state, argv) VALUES ('queued', 'make test')")


def test_open_default_uses_the_state_dir_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("SWARMDECK_STATE_DIR", str(tmp_path / "elsewhere"))

    store = StateStore.open_default()

    assert store.path == str(tmp_path / "elsewhere" / "state.db")
    assert os.path.exists(store.path)


def test_an_empty_file_becomes_a_fresh_database(tmp_path):
    path = tmp_path / "state.db"
    path.touch()

    assert StateStore(path).schema_version() == latest_version()


def test_each_thread_gets_its_own_connection(tmp_path):
    store = StateStore(tmp_path / "state.db")
    seen: list[sqlite3.Connection] = []

    def write(name: str) -> None:
        conn = store.connect()
        seen.append(conn)
        with store.transaction() as tx:
            tx.execute("INSERT INTO hook_events (event) VALUES (?)", (name,))
        store.close()

    threads = [threading.Thread(target=write, args=(f"t{i}",)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len({id(conn) for conn in seen}) == 4
    assert all(conn is not store.connect() for conn in seen)
    with store.read() as conn:
        assert conn.execute("SELECT count(*) FROM hook_events").fetchone()[0] == 4


def test_forked_child_opens_its_own_connection_and_writes(tmp_path):
    store = StateStore(tmp_path / "state.db")
    parent_conn = store.connect()

    pid = os.fork()
    if pid == 0:  # child: never return into pytest
        code = 1
        try:
            if store.connect() is parent_conn:
                code = 3
            else:
                with store.transaction() as conn:
                    conn.execute("INSERT INTO hook_events (event) VALUES ('from child')")
                code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)

    assert os.waitstatus_to_exitcode(status) == 0
    assert store.connect() is parent_conn
    with store.read() as conn:
        assert conn.execute("SELECT event FROM hook_events").fetchone()[0] == "from child"


# ---------------------------------------------------------------- transactions


def test_exception_inside_transaction_rolls_back_everything_and_reraises(tmp_path):
    store = StateStore(tmp_path / "state.db")

    with pytest.raises(ZeroDivisionError), store.transaction() as conn:
        conn.execute("INSERT INTO alerts (key, message) VALUES ('a', 'first')")
        conn.execute("INSERT INTO alerts (key, message) VALUES ('b', 'second')")
        _ = 1 / 0

    with store.read() as conn:
        assert conn.execute("SELECT count(*) FROM alerts").fetchone()[0] == 0
    assert not store.connect().in_transaction


def test_inner_transaction_is_a_savepoint_that_undoes_only_its_own_part(tmp_path):
    store = StateStore(tmp_path / "state.db")

    with store.transaction() as conn:
        conn.execute("INSERT INTO alerts (key, message) VALUES ('outer', 'kept')")
        with pytest.raises(sqlite3.IntegrityError), store.transaction() as inner:
            inner.execute("INSERT INTO alerts (key, message) VALUES ('inner', 'undone')")
            inner.execute("INSERT INTO alerts (key, message) VALUES ('outer', 'duplicate')")

    with store.read() as conn:
        assert [r["key"] for r in conn.execute("SELECT key FROM alerts")] == ["outer"]


def test_read_snapshot_refuses_writes_and_refuses_to_become_a_transaction(tmp_path):
    store = StateStore(tmp_path / "state.db")

    with store.read() as conn, pytest.raises(sqlite3.OperationalError, match="readonly"):
        conn.execute("INSERT INTO hook_events (event) VALUES ('sneaky')")
    with store.read(), pytest.raises(RuntimeError, match="inside read"), store.transaction():
        pass

    with store.transaction() as conn:
        conn.execute("INSERT INTO hook_events (event) VALUES ('fine')")
    with store.read() as conn:
        assert conn.execute("SELECT count(*) FROM hook_events").fetchone()[0] == 1


INSERT_WORKER = """
import pathlib, sys, time
from swarmdeck.state import StateStore
db, gate, rows, tag = sys.argv[1:]
print("ready", flush=True)
while not pathlib.Path(gate).exists():
    time.sleep(0.002)
store = StateStore(db)
for i in range(int(rows)):
    with store.transaction() as conn:
        conn.execute(
            "INSERT INTO hook_events (event, session_id, payload) VALUES ('w', ?, ?)", (tag, str(i))
        )
"""


def test_eight_processes_creating_and_writing_at_once_lose_no_row(tmp_path):
    path = tmp_path / "state.db"  # not created yet: the workers race to create it too
    gate = tmp_path / "go"

    workers = [run_python(INSERT_WORKER, str(path), str(gate), "200", f"w{n}") for n in range(8)]
    start_together(workers, gate)

    store = StateStore(path)
    assert store.schema_version() == latest_version()
    with store.read() as conn:
        counts = dict(
            conn.execute("SELECT session_id, count(*) FROM hook_events GROUP BY session_id")
        )
    assert counts == {f"w{n}": 200 for n in range(8)}


COUNTER_WORKER = """
import pathlib, sys, time
from swarmdeck.state import StateStore
db, gate, rounds = sys.argv[1:]
store = StateStore(db)
print("ready", flush=True)
while not pathlib.Path(gate).exists():
    time.sleep(0.002)
for _ in range(int(rounds)):
    with store.transaction() as conn:
        value = conn.execute("SELECT value FROM counter").fetchone()[0]
        time.sleep(0.002)  # widen the read-to-write window another writer could slip into
        conn.execute("UPDATE counter SET value = ?", (value + 1,))
"""


def test_read_modify_write_inside_transaction_never_loses_an_increment(tmp_path):
    path = tmp_path / "state.db"
    gate = tmp_path / "go"
    store = StateStore(path)
    with store.transaction() as conn:
        conn.execute("CREATE TABLE counter (value INTEGER NOT NULL)")
        conn.execute("INSERT INTO counter VALUES (0)")

    workers = [run_python(COUNTER_WORKER, str(path), str(gate), "25") for _ in range(4)]
    start_together(workers, gate)

    with store.read() as conn:
        assert conn.execute("SELECT value FROM counter").fetchone()[0] == 100


LOCK_HOLDER = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
conn.execute("INSERT INTO hook_events (event) VALUES ('holder')")
print("locked", flush=True)
time.sleep(float(sys.argv[2]))
conn.execute("COMMIT")
"""


def test_write_waits_for_another_process_holding_the_lock_and_keeps_its_row(tmp_path):
    path = tmp_path / "state.db"
    store = StateStore(path)
    holder = run_python(LOCK_HOLDER, str(path), "1.0")
    assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"

    started = time.monotonic()
    with store.transaction() as conn:
        conn.execute("INSERT INTO hook_events (event) VALUES ('waiter')")
    waited = time.monotonic() - started

    assert holder.wait(timeout=10) == 0
    assert waited > 0.5
    with store.read() as conn:
        events = [r["event"] for r in conn.execute("SELECT event FROM hook_events ORDER BY id")]
    assert events == ["holder", "waiter"]


RELEASER = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
time.sleep(float(sys.argv[2]))
conn.execute("COMMIT")
print(time.time(), flush=True)
"""


def test_a_waiting_write_takes_the_lock_soon_after_it_is_released(tmp_path, monkeypatch):
    # SQLite's own busy handler sleeps up to 100 ms between tries once it has waited a while,
    # leaving the lock idle while many runners wait; the store retries in steps of milliseconds.
    # The pauses it asks for are the proof: how soon a waiting process runs again is the
    # machine's load.
    path = tmp_path / "state.db"
    store = StateStore(path)
    pauses: list[float] = []
    real_sleep = time.sleep
    this_thread = threading.get_ident()
    beginning = False

    def noted_sleep(seconds: float) -> None:
        # time.sleep is the process's: another test's thread still running in this worker
        # sleeps through it too, and so does this thread's own wait for the holder to exit
        # (subprocess polls in growing steps); only the store's pauses while it begins count.
        if beginning and threading.get_ident() == this_thread:
            pauses.append(seconds)
        real_sleep(seconds)

    monkeypatch.setattr(state.store.time, "sleep", noted_sleep)
    for hold in ("0.93", "1.01", "1.12"):
        holder = run_python(RELEASER, str(path), hold)
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        before = len(pauses)
        beginning = True
        with store.transaction():
            beginning = False
            taken = time.time()
        released = float(holder.stdout.readline())
        assert holder.wait(timeout=10) == 0
        assert len(pauses) > before, "the wait was SQLite's, not the store's"
        assert taken > released
    assert max(pauses) <= state.store.BEGIN_PAUSE_MAX, max(pauses)
    assert store.connect().execute("PRAGMA busy_timeout").fetchone()[0] == 30_000


def test_lock_held_past_the_timeout_is_a_clear_state_error(tmp_path):
    path = tmp_path / "state.db"
    store = StateStore(path, lock_timeout=0.3)
    holder = run_python(LOCK_HOLDER, str(path), "30")
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        with (
            pytest.raises(StateError, match=r"stayed locked .* 0\.3 s") as caught,
            store.transaction() as conn,
        ):
            conn.execute("INSERT INTO hook_events (event) VALUES ('never')")
    finally:
        holder.kill()
        holder.wait()
    assert caught.value.exit_code == ExitCode.USAGE
    assert not store.connect().in_transaction


# ---------------------------------------------------------------- migrations


def test_older_database_is_migrated_forward_and_keeps_its_rows(tmp_path, monkeypatch):
    path = tmp_path / "state.db"
    monkeypatch.setattr(schema, "MIGRATIONS", [V1])
    old = StateStore(path)
    with old.transaction() as conn:
        conn.execute("INSERT INTO jobs (label, state, argv) VALUES ('build', 'done', '[]')")
    old.close()

    def add_notes_table(conn: sqlite3.Connection) -> None:
        conn.execute("CREATE TABLE notes (job_id INTEGER, text TEXT)")
        conn.execute("INSERT INTO notes SELECT id, label || ' noted' FROM jobs")

    monkeypatch.setattr(
        schema,
        "MIGRATIONS",
        [
            V1,
            Migration(2, "jobs get a note", "ALTER TABLE jobs ADD COLUMN note TEXT;\n"
                      "UPDATE jobs SET note = 'from; v2';"),
            Migration(5, "a notes table", add_notes_table),
        ],
    )  # fmt: skip
    store = StateStore(path)

    assert store.schema_version() == 5
    with store.read() as conn:
        job = conn.execute("SELECT label, state, note FROM jobs").fetchone()
        assert tuple(job) == ("build", "done", "from; v2")
        assert conn.execute("SELECT text FROM notes").fetchone()[0] == "build noted"
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 5


def test_rows_from_before_the_declared_cap_was_recorded_read_it_as_not_known(
    tmp_path, monkeypatch
):
    """Schema 10 adds jobs.declared_cap: '' for a row run without --cap, NULL for a row written
    before it was recorded (its rerun can only tell from the cap the cage had)."""
    path = tmp_path / "state.db"
    every = list(schema.MIGRATIONS)
    monkeypatch.setattr(schema, "MIGRATIONS", [m for m in every if m.version <= 9])
    old = StateStore(path)
    with old.transaction() as conn:
        conn.execute("INSERT INTO jobs (label, state, argv, cap) VALUES ('old', 'done', '[]', 7)")
    old.close()
    monkeypatch.setattr(schema, "MIGRATIONS", every)
    store = StateStore(path)
    assert store.schema_version() == latest_version() >= 10
    with store.read() as conn:
        [row] = conn.execute("SELECT label, cap, declared_cap FROM jobs").fetchall()
    assert tuple(row) == ("old", 7, None)


def test_peaks_from_before_their_time_was_recorded_stay_and_read_it_as_not_known(
    tmp_path, monkeypatch
):
    """Schema 16 adds peaks.peak_at: a ledger's recorded peaks are kept, and those from before
    say nothing of when they were reached (booking.settled_booking passes them over)."""
    path = tmp_path / "state.db"
    every = list(schema.MIGRATIONS)
    monkeypatch.setattr(schema, "MIGRATIONS", [m for m in every if m.version <= 15])
    old = StateStore(path)
    with old.transaction() as conn:
        conn.execute("INSERT INTO peaks (fingerprint, job_id, peak, cap, duration)"
                     " VALUES ('w', 1, 300, 900, 6.5)")
    old.close()
    monkeypatch.setattr(schema, "MIGRATIONS", every)
    store = StateStore(path)
    assert store.schema_version() == latest_version() >= 16
    with store.read() as conn:
        [row] = conn.execute("SELECT fingerprint, peak, cap, duration, peak_at FROM peaks")
    assert tuple(row) == ("w", 300, 900, 6.5, None)


def test_failed_migration_leaves_the_database_at_the_last_good_step(tmp_path, monkeypatch):
    path = tmp_path / "state.db"
    monkeypatch.setattr(
        schema,
        "MIGRATIONS",
        [
            V1,
            Migration(2, "fine", "CREATE TABLE fine (x INTEGER);"),
            Migration(
                3, "broken", "CREATE TABLE half (x INTEGER); INSERT INTO nowhere VALUES (1);"
            ),
        ],
    )

    with pytest.raises(StateError, match=r"migration 3 \(broken\) failed .* stays at schema 2"):
        StateStore(path)

    conn = sqlite3.connect(path)
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_schema WHERE type = 'table'")}
    version = conn.execute("SELECT value FROM swarmdeck_meta WHERE key = 'schema_version'")
    assert version.fetchone()[0] == "2"
    assert "fine" in tables and "half" not in tables
    conn.close()


def test_migration_that_breaks_a_foreign_key_is_rolled_back(tmp_path, monkeypatch):
    path = tmp_path / "state.db"
    orphan = (
        "CREATE TABLE parent (id INTEGER PRIMARY KEY);"
        "CREATE TABLE child (parent_id INTEGER REFERENCES parent (id));"
        "INSERT INTO child VALUES (42);"
    )
    monkeypatch.setattr(schema, "MIGRATIONS", [V1, Migration(2, "orphan", orphan)])

    with pytest.raises(StateError, match="broken foreign keys"):
        StateStore(path)

    monkeypatch.setattr(schema, "MIGRATIONS", [V1])
    assert StateStore(path).schema_version() == 1


def test_migrations_out_of_order_are_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(
        schema, "MIGRATIONS", [V1, Migration(3, "c", "SELECT 1;"), Migration(2, "b", "SELECT 1;")]
    )
    with pytest.raises(RuntimeError, match="strictly increasing"):
        StateStore(tmp_path / "state.db")


def test_shipped_migrations_are_strictly_increasing_from_one():
    versions = [m.version for m in schema.MIGRATIONS]
    assert versions[0] == 1
    assert versions == sorted(set(versions))


def test_database_from_a_newer_swarmdeck_is_refused_and_untouched(tmp_path):
    path = tmp_path / "state.db"
    StateStore(path).close()
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("UPDATE swarmdeck_meta SET value = '99' WHERE key = 'schema_version'")
    conn.execute("PRAGMA user_version = 99")
    conn.close()
    before = untouched_evidence(path)

    with pytest.raises(StateError) as caught:
        StateStore(path)

    assert str(caught.value) == (
        f"state database {path} was made by a newer swarmdeck "
        f"(schema 99 > {latest_version()}); upgrade swarmdeck"
    )
    assert caught.value.exit_code == ExitCode.USAGE
    assert untouched_evidence(path) == before


# ---------------------------------------------------------------- files that are not ours


def test_garbage_file_is_refused_and_left_byte_identical(tmp_path):
    path = tmp_path / "state.db"
    path.write_bytes(b"[ui]\nrefresh_interval = 2\n" * 50)
    before = untouched_evidence(path)

    with pytest.raises(StateError, match="is not a SQLite database") as caught:
        StateStore(path)

    assert str(path) in str(caught.value) and "\n" not in str(caught.value)
    assert "SWARMDECK_STATE_DIR" in str(caught.value)
    assert caught.value.exit_code == ExitCode.USAGE
    assert untouched_evidence(path) == before


@pytest.mark.parametrize("journal", ["delete", "wal", "wal-in-use"])
def test_another_programs_sqlite_file_is_refused_and_untouched(tmp_path, journal):
    path = tmp_path / "state.db"
    theirs = sqlite3.connect(path, isolation_level=None)
    theirs.execute(f"PRAGMA journal_mode = {journal.removesuffix('-in-use')}")
    theirs.execute("CREATE TABLE moz_places (id INTEGER PRIMARY KEY, url TEXT)")
    theirs.execute("INSERT INTO moz_places (url) VALUES ('https://example.org')")
    if journal != "wal-in-use":
        theirs.close()
    before = untouched_evidence(path)

    try:
        with pytest.raises(StateError, match="another program's SQLite database") as caught:
            StateStore(path)
    finally:
        after = untouched_evidence(path)
        theirs.close()

    assert "moz_places" in str(caught.value)
    assert after == before


def test_sqlite_file_with_another_application_id_is_refused_even_without_tables(tmp_path):
    path = tmp_path / "state.db"
    theirs = sqlite3.connect(path)
    theirs.execute("PRAGMA application_id = 1234")
    theirs.close()
    before = untouched_evidence(path)

    with pytest.raises(StateError, match=r"application_id 0x4d2"):
        StateStore(path)

    assert untouched_evidence(path) == before


def test_truncated_database_is_refused_as_corrupt_and_untouched(tmp_path):
    path = tmp_path / "state.db"
    closed_store_with_rows(path, 3000)
    with path.open("r+b") as handle:
        handle.truncate(path.stat().st_size // 2)
    before = untouched_evidence(path)

    with pytest.raises(StateError, match="is corrupt") as caught:
        StateStore(path)

    assert ".recover" in str(caught.value)
    assert untouched_evidence(path) == before


def test_overwritten_pages_are_refused_as_corrupt_and_untouched(tmp_path):
    path = tmp_path / "state.db"
    closed_store_with_rows(path, 3000)
    size = path.stat().st_size
    with path.open("r+b") as handle:
        handle.seek(size // 3)
        handle.write(os.urandom(64 * 1024))
    before = untouched_evidence(path)

    with pytest.raises(StateError, match="is corrupt"):
        StateStore(path)

    assert untouched_evidence(path) == before


def test_file_cut_inside_its_header_is_refused_as_corrupt_and_untouched(tmp_path):
    path = tmp_path / "state.db"
    path.write_bytes(b"SQLite format 3\x00" + b"\x10\x00" * 10)
    before = untouched_evidence(path)

    with pytest.raises(StateError, match=r"is corrupt \(only 36 bytes\)"):
        StateStore(path)

    assert untouched_evidence(path) == before


def test_corruption_met_by_a_query_is_a_state_error_when_opening_skipped_the_check(tmp_path):
    path = tmp_path / "state.db"
    closed_store_with_rows(path, 3000)
    with path.open("r+b") as handle:
        handle.seek(path.stat().st_size // 3)
        handle.write(os.urandom(64 * 1024))

    store = StateStore(path, verify=False)

    with pytest.raises(StateError, match="is corrupt"), store.read() as conn:
        conn.execute("SELECT count(*), sum(length(payload)) FROM hook_events").fetchone()


def counting_quick_checks(monkeypatch) -> list[int]:
    # The stamp is believed once the file settled (cache_settle.py; tests/test_cache_settle.py
    # has that rule): here as soon as it matches, whatever the clock's tick.
    monkeypatch.setattr(cache_settle, "SETTLE_NS", -10**12)
    calls: list[int] = []
    real = verify.quick_check
    monkeypatch.setattr(verify, "quick_check", lambda conn: calls.append(1) or real(conn))
    return calls


def test_a_file_is_verified_once_per_change_not_on_every_open(tmp_path, monkeypatch):
    path = tmp_path / "state.db"
    closed_store_with_rows(path, 3000)
    checks = counting_quick_checks(monkeypatch)

    StateStore(path).close()
    StateStore(path).close()
    assert len(checks) == 1, "the second open finds the file as it was verified"

    closed_store_with_rows(path, 10)
    assert len(checks) == 1, "opened unchanged"
    StateStore(path).close()
    assert len(checks) == 2, "rows written and checkpointed: the file changed, so check again"


def test_a_file_damaged_after_it_was_verified_is_refused(tmp_path):
    path = tmp_path / "state.db"
    closed_store_with_rows(path, 3000)
    StateStore(path).close()
    size = path.stat().st_size
    with path.open("r+b") as handle:
        handle.seek(size // 3)
        handle.write(os.urandom(64 * 1024))
    assert path.stat().st_size == size

    with pytest.raises(StateError, match="is corrupt"):
        StateStore(path)


def test_a_file_damaged_in_place_keeping_its_size_and_time_is_refused(tmp_path):
    path = tmp_path / "state.db"
    closed_store_with_rows(path, 3000)
    StateStore(path).close()
    before = path.stat()
    with path.open("r+b") as handle:
        handle.seek(before.st_size // 3)
        handle.write(os.urandom(64 * 1024))
    # The same inode, size and mtime: only the change time tells the file was written.
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))

    with pytest.raises(StateError, match="is corrupt"):
        StateStore(path)


def test_a_foreign_file_put_in_place_keeping_size_and_time_is_refused(tmp_path):
    path = tmp_path / "state.db"
    closed_store_with_rows(path, 10)
    StateStore(path).close()
    before = path.stat()
    other = tmp_path / "other.db"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE notes (body TEXT)")
    conn.execute("INSERT INTO notes VALUES (?)", ("x" * 100,))
    conn.commit()
    conn.close()
    foreign = other.read_bytes()[: before.st_size].ljust(before.st_size, b"\0")
    with path.open("r+b") as handle:
        handle.write(foreign)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_size == before.st_size

    with pytest.raises(StateError):
        StateStore(path)
    assert path.read_bytes() == foreign, "left exactly as it was"


def test_a_file_replaced_by_a_damaged_copy_of_the_same_size_and_time_is_refused(tmp_path):
    path = tmp_path / "state.db"
    closed_store_with_rows(path, 3000)
    StateStore(path).close()
    before = path.stat()
    damaged = bytearray(path.read_bytes())
    damaged[len(damaged) // 3 : len(damaged) // 3 + 65536] = os.urandom(65536)
    copy = tmp_path / "copy.db"
    copy.write_bytes(bytes(damaged))
    os.utime(copy, ns=(before.st_atime_ns, before.st_mtime_ns))
    os.replace(copy, path)

    with pytest.raises(StateError, match="is corrupt"):
        StateStore(path)


@pytest.mark.parametrize(
    "path",
    ["/var/state.db", "/a b/c%d#e?f.db", "/é/ü/state.db", "/x/~_.-+=,;@!$&'()*/y", "//two/s",
     "/tab\there/\x01.db"],
)
def test_the_inspection_uri_spells_a_path_as_pathlib_does(path: str) -> None:
    assert file_uri(path) == Path(path).as_uri()


LEAVE_SCHEMA_IN_WAL = """
import os, sys
from swarmdeck.state import StateStore
store = StateStore(sys.argv[1])
store.connect().execute("PRAGMA wal_autocheckpoint = 0")
with store.transaction() as conn:
    conn.execute("INSERT INTO hook_events (event) VALUES ('only in the log')")
os._exit(0)  # no close: the schema stays in the write-ahead log, never checkpointed
"""


def _schema_only_in_the_log(path: Path) -> Path:
    """A WAL-mode file whose main part holds no table yet, its schema and rows in -wal; the
    -shm index removed, as a copy that took the file and its log but not the index has it."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA user_version = 0")
    conn.close()  # the last connection: it checkpoints, and the file stays in WAL mode
    leaver = subprocess.run([sys.executable, "-c", LEAVE_SCHEMA_IN_WAL, str(path)], timeout=60)
    assert leaver.returncode == 0
    shm = Path(f"{path}-shm")
    shm.unlink(missing_ok=True)
    assert Path(f"{path}-wal").stat().st_size > 0
    return shm


def test_a_log_without_its_index_is_refused_and_left_as_it_was(tmp_path):
    path = tmp_path / "state.db"
    _schema_only_in_the_log(path)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    with pytest.raises(StateError, match="write-ahead log but no -shm index"):
        StateStore(path)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


def test_an_index_that_appears_a_moment_later_is_waited_for(tmp_path):
    """Between a last connection's removal of -shm and of -wal, and while a first connection
    makes them, another process can see the log without its index for a moment: that is a
    file being written, not a copy missing a part, and it opens once the index is there."""
    path = tmp_path / "state.db"
    shm = _schema_only_in_the_log(path)
    later = threading.Timer(0.1, lambda: shm.write_bytes(b""))
    later.start()
    try:
        store = StateStore(path)
    finally:
        later.cancel()
    with store.read() as conn:
        assert conn.execute("SELECT event FROM hook_events").fetchall()[0][0] == "only in the log"
