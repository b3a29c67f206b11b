"""A caged job names the Claude Code session that started it and, when the PreToolUse hook saw
its command from a subagent, that subagent: the ledger row and the snapshot carry both."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

from cagekit import MIB, SWARMDECK, write_config

from swarmdeck.hook_events import has_spooled
from swarmdeck.probes.memory_book import ledger_jobs
from swarmdeck.state import StateStore

SID = "6666cccc-0000-4000-8000-000000000006"


def _pre_tool_use(
    store: StateStore, command: str, agent_id: str | None, at: float | None = None
) -> None:
    payload = {"hook_event_name": "PreToolUse", "tool_name": "Bash",
               "tool_input": {"command": command}, "session_id": SID}
    with store.transaction() as conn:
        conn.execute(
            "INSERT INTO hook_events (event, session_id, agent_id, tool_name, payload,"
            " received_at) VALUES ('PreToolUse', ?, ?, 'Bash', ?, ?)",
            (SID, agent_id, json.dumps(payload), time.time() if at is None else at),
        )


def _run(env: dict[str, str], *argv: str) -> None:
    done = subprocess.run([SWARMDECK, "run", "--", *argv], capture_output=True, text=True,
                          timeout=60, env=env)
    assert done.returncode == 0, done.stderr


def test_a_job_records_the_session_and_the_subagent_that_ran_it(
    isolated_home: Path, v1_slice: Path
) -> None:
    write_config(isolated_home / "config.toml", v1_slice, 100 * MIB, default_prediction="10M")
    store = StateStore.open_default()
    _pre_tool_use(store, "swarmdeck run -- true subagent-one", "agent42")
    _pre_tool_use(store, "swarmdeck run -- true main-thread", None)
    env = {**os.environ, "CLAUDE_CODE_SESSION_ID": SID}
    _run(env, "true", "subagent-one")
    _run(env, "true", "main-thread")
    _run({k: v for k, v in os.environ.items() if k != "CLAUDE_CODE_SESSION_ID"}, "true", "x")
    jobs = sorted(ledger_jobs(store), key=lambda job: job.id)
    assert [(job.session_id, job.agent_id) for job in jobs] == [
        (SID, "agent42"), (SID, None), (None, None),
    ]
    assert jobs[0].to_json()["session_id"] == SID and jobs[0].to_json()["agent_id"] == "agent42"


def test_a_light_bash_call_waiting_in_the_hook_spool_still_names_its_subagent(
    isolated_home: Path, v1_slice: Path
) -> None:
    write_config(isolated_home / "config.toml", v1_slice, 100 * MIB, default_prediction="10M")
    store = StateStore.open_default()
    store.close()  # its schema is then in the file's header, where a light hook call reads it
    payload = {"hook_event_name": "PreToolUse", "tool_name": "Bash", "session_id": SID,
               "agent_id": "agent77", "tool_input": {"command": "swarmdeck run -- true spooled"}}
    hook = subprocess.run([SWARMDECK, "hook", "pre-tool-use"], input=json.dumps(payload),
                          capture_output=True, text=True, timeout=60, check=True)
    assert hook.stdout == "" and hook.stderr == ""
    assert has_spooled(str(store.path))  # light: spooled, not inserted
    _run({**os.environ, "CLAUDE_CODE_SESSION_ID": SID}, "true", "spooled")
    [job] = ledger_jobs(store)
    assert (job.session_id, job.agent_id) == (SID, "agent77")


def test_the_call_that_started_a_job_is_looked_for_among_the_sessions_newest_rows_only(
    isolated_home: Path,
) -> None:
    # Inside the write lock the look costs the same however long the session's history: a
    # call older than the session's HOOK_SCAN newest rows is not read (the call that starts a
    # job comes just before it), and of the calls read the newest wins.
    from ledger_rows import add_job
    from swarmdeck.actions.jobrecord import HOOK_SCAN, started_by_agent

    store = StateStore.open_default()
    job = add_job(store, argv=json.dumps(["make", "-j8", "x"]))
    now = time.time()
    _pre_tool_use(store, "make -j8 x", "agent-old", at=now - 100)
    for n in range(HOOK_SCAN):
        _pre_tool_use(store, f"ls {n}", "agent-busy", at=now - 50 + n / 100)
    with store.read() as conn:
        assert started_by_agent(conn, job, SID, now) is None
    _pre_tool_use(store, "cd here && make -j8 x", "agent-new", at=now - 1)
    _pre_tool_use(store, "make -j8 x", "agent-newer", at=now - 0.5)
    with store.read() as conn:
        assert started_by_agent(conn, job, SID, now) == "agent-newer"
