"""Light hook calls wait in the spool and reach hook_events whole, once, and in their order.

Real state files and real processes: writers spool while folds take their files, folds die
before or after their commit, a write is cut short, locks are held while 200 calls come, and
the old spool's place holds a link, a FIFO or a file of someone else's mode. In every case each
call ends as one row, the row a direct insert writes, or the writer says the spool refused it
and the call goes to the database.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from claude_lines import bash_payload, hook_payload
from swarmdeck import hook_events, paths
from swarmdeck.hook_events import (
    CALL_PREFIX,
    MAX_PENDING,
    MAX_SPOOLED_INPUT,
    PART_AGE,
    PART_PREFIX,
    append,
    fold,
    fold_into,
    record_line,
    spool_path,
    store_is_set_up,
)
from swarmdeck.hooks import entry
from swarmdeck.hooks.payload import HookInput
from swarmdeck.hooks.record import record_event
from swarmdeck.state import StateStore


@pytest.fixture
def store() -> StateStore:
    """A set-up store whose schema is in the file's header (closed: the WAL is checkpointed)."""
    made = StateStore.open_default()
    made.close()
    return made


def _raw(command: str, **fields) -> bytes:
    return json.dumps(bash_payload(command, **fields)).encode()


def _rows(store: StateStore) -> list[dict]:
    fold(store)
    with store.read() as conn:
        rows = conn.execute("SELECT * FROM hook_events ORDER BY id").fetchall()
    return [dict(row) for row in rows]


def _commands(store: StateStore) -> list[str | None]:
    return [json.loads(r["payload"]).get("tool_input", {}).get("command") for r in _rows(store)]


def _spool(store: StateStore) -> Path:
    """The one spool file an older swarmdeck appended to (folded when found)."""
    return Path(spool_path(str(store.path)))


def _waiting() -> list[str]:
    """The spooled calls' files, oldest first."""
    return sorted(p for p in os.listdir(paths.state_dir()) if p.startswith(CALL_PREFIX))


def _spool_files() -> list[str]:
    return [p for p in os.listdir(paths.state_dir()) if p.startswith("hook-spool")]


def test_a_spooled_call_becomes_the_row_a_direct_insert_writes(store: StateStore) -> None:
    raw = json.dumps(bash_payload("ls -la", agent_id="a7"), indent=2).encode()
    assert b"\n" in raw  # its newlines are whitespace, and the record stays one line
    assert append(raw, 1000.25)
    [spooled] = _rows(store)
    record_event(HookInput("PreToolUse", json.loads(raw)), now=2000.5)
    direct = _rows(store)[1]
    for row in (spooled, direct):
        del row["id"], row["received_at"]
    assert spooled == direct
    assert spooled["agent_id"] == "a7" and spooled["tool_name"] == "Bash"


def _hook(event: str, payload: dict) -> None:
    """One hook call, as the console script makes it (in this process)."""
    out, err = io.StringIO(), io.StringIO()
    entry.run([event], io.BytesIO(json.dumps(payload).encode()), out, err)
    assert out.getvalue() == "" and err.getvalue() == ""


def test_rows_keep_the_order_of_the_calls_across_spool_and_database(store: StateStore) -> None:
    _hook("pre-tool-use", bash_payload("ls first"))
    assert len(_waiting()) == 1
    _hook("stop", hook_payload("Stop", stop_hook_active=False))
    assert _waiting() == []  # the database write folded it first
    _hook("pre-tool-use", bash_payload("ls last"))
    rows = _rows(store)
    assert [r["event"] for r in rows] == ["PreToolUse", "Stop", "PreToolUse"]
    assert _commands(store) == ["ls first", None, "ls last"]
    assert [r["received_at"] for r in rows] == sorted(r["received_at"] for r in rows)


WRITER = """
import sys, time
from swarmdeck.hook_events import append
from swarmdeck.hooks.record import record_event
from swarmdeck.hooks import entry
from swarmdeck.hooks.payload import HookInput
import json
name, count = sys.argv[1], int(sys.argv[2])
for n in range(count):
    raw = json.dumps({"hook_event_name": "PreToolUse", "session_id": name, "tool_name": "Bash",
                      "tool_input": {"command": f"{name} {n}"}}).encode()
    now = time.time()
    if not append(raw, now):
        record_event(HookInput("PreToolUse", json.loads(raw)), now)
"""


def test_writers_and_folds_at_once_lose_nothing_and_double_nothing(store: StateStore) -> None:
    writers = [
        subprocess.Popen([sys.executable, "-c", WRITER, f"w{i}", "150"]) for i in range(4)
    ]
    folds = 0
    while any(w.poll() is None for w in writers):
        fold(store)
        folds += 1
    assert all(w.wait(timeout=60) == 0 for w in writers)
    commands = _commands(store)
    assert sorted(commands) == sorted(f"w{i} {n}" for i in range(4) for n in range(150))
    for i in range(4):  # each writer's calls in the order it made them
        mine = [c for c in commands if c.startswith(f"w{i} ")]
        assert mine == [f"w{i} {n}" for n in range(150)]
    assert folds > 1
    assert _spool_files() == []


def test_a_fold_that_fails_before_its_commit_leaves_its_calls_to_the_next(
    store: StateStore,
) -> None:
    assert append(_raw("ls kept"), 10.0)
    with pytest.raises(RuntimeError), store.transaction() as conn:
        fold_into(conn, str(store.path))
        raise RuntimeError("the fold's process dies here")
    assert len(_waiting()) == 1
    assert append(_raw("ls after"), 11.0)
    assert _commands(store) == ["ls kept", "ls after"]
    assert _spool_files() == []


def test_a_fold_that_committed_but_left_its_file_is_not_folded_twice(store: StateStore) -> None:
    assert append(_raw("ls once"), 10.0)
    with store.transaction() as conn:
        fold_into(conn, str(store.path))  # committed; its file is not removed
    assert len(_waiting()) == 1
    assert _commands(store) == ["ls once"]
    assert _spool_files() == []


def test_a_record_cut_short_in_the_old_spool_is_skipped_and_the_next_is_kept(
    store: StateStore,
) -> None:
    whole = record_line(_raw("ls cut"), 10.0)
    fd = os.open(_spool(store), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.write(fd, whole[: len(whole) // 2])  # a write that failed half way (its call went on)
    os.write(fd, record_line(_raw("ls whole"), 11.0))
    os.close(fd)
    assert append(_raw("ls new"), 12.0)
    assert _commands(store) == ["ls whole", "ls new"]
    assert _spool_files() == []


def test_a_link_in_the_old_spools_place_is_neither_written_nor_folded(
    store: StateStore, tmp_path: Path
) -> None:
    target = tmp_path / "elsewhere"
    target.write_bytes(record_line(_raw("ls elsewhere"), 9.0))
    target.chmod(0o600)  # private and regular: only the link itself is wrong
    _spool(store).symlink_to(target)
    assert append(_raw("ls"), 10.0)
    assert _commands(store) == ["ls"]
    assert target.read_bytes() == record_line(_raw("ls elsewhere"), 9.0)
    assert _spool(store).is_symlink()


def test_a_fifo_in_the_old_spools_place_blocks_neither_writer_nor_fold(
    store: StateStore,
) -> None:
    os.mkfifo(_spool(store))
    started = time.monotonic()
    assert append(_raw("ls"), 10.0)
    assert _commands(store) == ["ls"]
    assert time.monotonic() - started < 10.0, "a FIFO's open would block for good"


def test_a_spooled_file_others_may_read_is_left_alone(store: StateStore) -> None:
    assert append(_raw("ls mine"), 10.0)
    [call] = _waiting()
    os.chmod(os.path.join(paths.state_dir(), call), 0o644)
    assert append(_raw("ls more"), 11.0)
    assert _commands(store) == ["ls more"]  # whoever made it so, it is not ours now
    assert _waiting() == [call]


def test_a_state_folder_others_may_write_gets_no_spool(store: StateStore) -> None:
    os.chmod(paths.state_dir(), 0o777)
    assert not append(_raw("ls"), 10.0)
    assert _spool_files() == []


def test_no_spool_beside_a_store_that_is_not_set_up_or_not_swarmdecks(tmp_path: Path) -> None:
    db = Path(paths.state_db_path())
    db.parent.mkdir(mode=0o700, parents=True)
    assert not append(_raw("ls"), 10.0)  # no store yet: the database path creates it
    db.write_bytes(b"not a database at all" * 10)
    assert not store_is_set_up(str(db))
    assert not append(_raw("ls"), 10.0)
    db.unlink()
    StateStore.open_default().close()
    assert store_is_set_up(str(db))
    header = bytearray(db.read_bytes())
    header[68:72] = b"XXXX"  # another program's application id
    db.write_bytes(bytes(header))
    assert not store_is_set_up(str(db))
    assert _spool_files() == []


def test_big_inputs_and_a_full_spool_go_to_the_database(store: StateStore) -> None:
    assert not append(_raw("x" * MAX_SPOOLED_INPUT), 10.0)
    for n in range(MAX_PENDING - 1):
        assert append(_raw(f"ls {n}"), 10.0 + n)
    assert append(_raw("ls last"), 20000.0)
    assert not append(_raw("ls over"), 20001.0)
    assert len(_commands(store)) == MAX_PENDING  # one fold takes them all
    assert append(_raw("ls over"), 20001.0)


def test_a_part_file_left_by_a_writer_that_died_is_removed_only_once_abandoned(
    store: StateStore,
) -> None:
    folder = paths.state_dir()
    old, new = (os.path.join(folder, f"{PART_PREFIX}{n:020d}.1.1") for n in (1, 2))
    for path in (old, new):
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(fd, record_line(_raw("ls never renamed"), 10.0))
        os.close(fd)
    long_ago = time.time() - PART_AGE - 10
    os.utime(old, (long_ago, long_ago))
    assert append(_raw("ls"), 10.0)
    assert _commands(store) == ["ls"]
    assert not os.path.exists(old) and os.path.exists(new)


HOLDER = """
import os, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY)
os.lockf(fd, os.F_LOCK, 0)
print("held", flush=True)
sys.stdin.read()
"""


def test_a_fold_waits_for_an_old_writer_only_so_long_and_then_leaves_its_spool(
    store: StateStore,
) -> None:
    fd = os.open(_spool(store), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.write(fd, record_line(_raw("ls held"), 10.0))
    os.close(fd)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(_spool(store))],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "held\n"
        started = time.monotonic()
        assert _commands(store) == []
        assert time.monotonic() - started < hook_events.LOCK_WAIT + 10.0
    finally:
        holder.communicate("", timeout=30)
    assert _commands(store) == ["ls held"]


@pytest.mark.parametrize("encoding", ["utf-8-sig", "utf-16", "utf-32"])
def test_an_input_json_reads_in_another_encoding_is_recorded_once(
    store: StateStore, encoding: str
) -> None:
    # json reads a marked or wide input, but a spool line is UTF-8: such a call would be
    # spooled, then skipped by the fold as a damaged line, and lost.
    raw = json.dumps(bash_payload("ls marked")).encode(encoding)
    _hook_raw("pre-tool-use", raw)
    assert _commands(store) == ["ls marked"]


def _hook_raw(event: str, raw: bytes) -> None:
    out, err = io.StringIO(), io.StringIO()
    entry.run([event], io.BytesIO(raw), out, err)
    assert out.getvalue() == "" and err.getvalue() == ""


CUT_WRITER = """
import os, resource, sys
from swarmdeck.hook_events import append, record_line
raw = sys.stdin.buffer.read()
# The call's file may hold all of the record but its last newline: the write stops one byte
# short.
limit = len(record_line(raw, 30.0)) - 1
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
print(append(raw, 30.0), flush=True)
"""


def test_a_write_cut_short_one_byte_before_its_end_is_recorded_once(store: StateStore) -> None:
    # All of the record but its newline is a whole JSON line: left in the spool, the fold
    # would insert it beside the row the call then writes itself.
    assert append(_raw("ls before"), 20.0)
    raw = _raw("ls cut")
    done = subprocess.run([sys.executable, "-c", CUT_WRITER], input=raw,
                          capture_output=True, timeout=60)
    assert done.stdout.strip() == b"False", done.stderr
    assert not [p for p in _spool_files() if p.startswith(PART_PREFIX)]
    record_event(HookInput("PreToolUse", json.loads(raw)), now=30.0)
    assert _commands(store) == ["ls before", "ls cut"]


SWARMDECK = Path(sys.executable).parent / "swarmdeck"


AT_ONCE = 16


def _finished(call: subprocess.Popen[bytes]) -> tuple[bytes, bytes]:
    """What a call printed, once it has ended."""
    out, err = call.stdout.read(), call.stderr.read()
    call.wait(timeout=300)
    return out, err


def test_light_calls_while_the_spool_and_the_database_are_held_are_all_recorded_at_once(
    store: StateStore,
) -> None:
    # What a light call could wait on: the spool's lock (a writer or a fold holding it) and
    # the database's write lock (a fold inside its transaction). Held for as long as the calls
    # take, none of them may wait for it (each would say "event not recorded" when its budget
    # ran out) or lose its call: all 200 are rows once the locks are let go.
    import sqlite3

    # One call first, as the calls before them on a machine would have: it builds the settings
    # cache the light calls read and compiles what they import.
    subprocess.run([SWARMDECK, "hook", "pre-tool-use"], input=_raw("ls first"), timeout=60,
                   check=True)
    spool = _spool(store)
    fd = os.open(spool, os.O_WRONLY | os.O_CREAT, 0o600)
    os.lockf(fd, os.F_LOCK, 0)
    writer = sqlite3.connect(store.path, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    # At most AT_ONCE calls run together: 200 interpreters starting at once on two cores would
    # each take seconds of CPU time to get going, and run out of their budget whatever they
    # waited on. The locks are held from the first call to the last.
    calls: list[subprocess.Popen[bytes]] = []
    said: list[tuple[bytes, bytes]] = []
    try:
        for n in range(200):
            if len(calls) - len(said) >= AT_ONCE:
                said.append(_finished(calls[len(said)]))
            call = subprocess.Popen([SWARMDECK, "hook", "pre-tool-use"], stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            call.stdin.write(_raw(f"ls {n}"))  # a few hundred bytes: the pipe takes them all
            call.stdin.close()
            calls.append(call)
        said += [_finished(call) for call in calls[len(said):]]
    finally:
        writer.execute("ROLLBACK")
        writer.close()
        os.close(fd)
    assert [call.returncode for call in calls] == [0] * 200
    assert (len(_waiting()), [err for _out, err in said if err]) == (201, [])
    assert sorted(_commands(store)) == sorted(["ls first", *(f"ls {n}" for n in range(200))])
    assert not hook_events.has_spooled(str(store.path))
