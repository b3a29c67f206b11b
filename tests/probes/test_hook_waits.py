"""A session whose last hook event is a Notification asking for the person waits for the person,
until any later event of the session; the pid file's own `waiting` says it first."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from claude_lines import BASE, ClaudeTree, Lines, bash_payload
from swarmdeck.hook_events import append
from swarmdeck.hooks.payload import HookInput
from swarmdeck.hooks.record import record_event
from swarmdeck.probes.claude.hook_activity import hook_waits
from swarmdeck.probes.claude.sessions import (
    SessionsProbe,
    sessions_with_hooks,
    waiting_for_person,
)
from swarmdeck.state import StateStore

SID = "7777cccc-0000-4000-8000-000000000007"
OTHER = "6666bbbb-0000-4000-8000-000000000006"


def _event(event: str, at: float, session: str = SID, **fields) -> None:
    record_event(
        HookInput(event, {"hook_event_name": event, "session_id": session, **fields}), now=at
    )


def _ask(at: float, session: str = SID, kind: str = "permission_prompt", **fields) -> None:
    _event("Notification", at, session, notification_type=kind, **fields)


def test_a_notification_asking_for_the_person_with_nothing_after_it_is_a_wait() -> None:
    _ask(100, message="Claude needs your permission to use Bash")
    _ask(101, OTHER, kind="idle_prompt")
    waits = hook_waits(StateStore.open_default(), 0)
    assert waits[SID].what == "Claude needs your permission to use Bash"
    assert waits[SID].since == 100
    assert waits[OTHER].what == "idle_prompt", "no message: its type says what it waits for"


def test_any_later_event_of_the_session_ends_the_wait() -> None:
    _ask(100, message="permission")
    _event("PostToolUse", 101, tool_name="Bash", tool_use_id="t1")
    _ask(102, OTHER, message="a question", kind="elicitation_dialog")
    _event("PreToolUse", 103, OTHER.replace("6", "5"), tool_name="Bash")
    waits = hook_waits(StateStore.open_default(), 0)
    assert list(waits) == [OTHER], "another session's event ends nothing"


def test_notifications_that_only_tell_something_are_not_waits() -> None:
    _ask(100, kind="auth_success", message="logged in")
    _ask(101, OTHER, kind="agent_completed", message="done")
    assert hook_waits(StateStore.open_default(), 0) == {}


def test_a_wait_older_than_the_window_is_not_looked_at() -> None:
    _ask(100, message="permission")
    assert hook_waits(StateStore.open_default(), 101) == {}


def _live_session(tmp_path: Path, **pid_fields) -> SessionsProbe:
    tree = ClaudeTree(tmp_path / "claude")
    main = Lines(SID)
    main.prompt("go", 0)
    tree.write_main(main)
    tree.write_pid_file(os.getpid(), SID, **pid_fields)
    return SessionsProbe(tmp_path / "claude")


def test_a_live_session_with_a_hook_wait_needs_the_person_until_it_is_answered(
    tmp_path: Path,
) -> None:
    probe = _live_session(tmp_path, status="busy")
    store = StateStore.open_default()
    asked = time.time()
    _ask(asked, message="Claude needs your permission to use Bash")
    [session] = sessions_with_hooks(probe, store)
    assert session.needs_person
    assert session.waiting_for == "Claude needs your permission to use Bash"
    assert session.waiting_since == asked
    assert waiting_for_person([session]) == [session]
    assert session.to_json()["waiting_since"] == asked

    _event("PostToolUse", asked + 1, tool_name="Bash", tool_use_id="t1")
    [session] = sessions_with_hooks(probe, store)
    assert not session.needs_person
    assert session.waiting_for is None and session.waiting_since is None


def test_the_pid_files_own_wait_is_shown_as_it_says(tmp_path: Path) -> None:
    probe = _live_session(tmp_path, status="waiting", waitingFor="approve Bash(rm -rf site)")
    _ask(time.time(), message="Claude needs your permission to use Bash")
    [session] = sessions_with_hooks(probe, StateStore.open_default())
    assert session.needs_person and session.hook_wait is None
    assert session.waiting_for == "approve Bash(rm -rf site)"


def test_a_session_that_is_over_waits_for_no_one(tmp_path: Path) -> None:
    tree = ClaudeTree(tmp_path / "claude")
    main = Lines(SID)
    main.prompt("go", 0)
    tree.write_main(main)
    tree.write_pid_file(os.getpid(), OTHER)  # pid files are written, and SID's is gone
    _ask(time.time(), message="permission")
    sessions = sessions_with_hooks(SessionsProbe(tmp_path / "claude"), StateStore.open_default())
    assert [s.session_id for s in sessions if s.needs_person] == []


def test_a_newer_idle_in_the_pid_file_ends_an_older_wait(tmp_path: Path) -> None:
    """A declined permission prompt raises no hook (2.1.328): only the pid file's newer status
    says the person answered."""
    asked = time.time() - 10
    probe = _live_session(tmp_path, status="idle", updatedAt=int((asked + 5) * 1000),
                          statusUpdatedAt=int((asked + 5) * 1000))
    _ask(asked, message="Claude needs your permission to use Bash")
    [session] = sessions_with_hooks(probe, StateStore.open_default())
    assert not session.needs_person
    assert session.waiting_for is None and session.waiting_since is None


def test_an_older_idle_in_the_pid_file_keeps_a_newer_wait(tmp_path: Path) -> None:
    asked = time.time()
    probe = _live_session(tmp_path, status="idle", statusUpdatedAt=int((asked - 60) * 1000))
    _ask(asked, message="Claude needs your permission to use Bash")
    [session] = sessions_with_hooks(probe, StateStore.open_default())
    assert session.needs_person and session.waiting_since == asked


def test_a_workers_permission_prompt_is_a_wait() -> None:
    _ask(100, kind="worker_permission_prompt", message="a worker needs your permission")
    assert hook_waits(StateStore.open_default(), 0)[SID].what == "a worker needs your permission"


def test_a_permission_request_is_a_wait_from_the_moment_the_dialog_opens() -> None:
    _event("PermissionRequest", 100, tool_name="Bash",
           tool_input={"command": "touch made.txt", "description": "make it"})
    wait = hook_waits(StateStore.open_default(), 0)[SID]
    assert wait.what == "permission for Bash: touch made.txt"
    assert wait.since == 100


def test_a_session_end_closes_the_session_at_once(tmp_path: Path) -> None:
    """Without pid files (liveness unknown), a wait and a running subagent would last until the
    session went quiet for STALE_AFTER; its SessionEnd ends both."""
    tree = ClaudeTree(tmp_path / "claude")
    main = Lines(SID)
    main.prompt("go", 0)
    tree.write_main(main)
    now = BASE + 60
    _event("SubagentStart", now - 3, agent_id="a1", agent_type="general-purpose")
    _ask(now - 2, message="Claude needs your permission")
    probe = SessionsProbe(tmp_path / "claude", clock=lambda: now)
    store = StateStore.open_default()
    [session] = sessions_with_hooks(probe, store)
    assert session.needs_person and [a.agent_id for a in session.hook_agents] == ["a1"]
    _event("SessionEnd", now - 1, reason="prompt_input_exit")
    [session] = sessions_with_hooks(probe, store)
    assert not session.needs_person and session.hook_agents == []


def test_a_light_call_still_in_the_spool_answers_a_wait() -> None:
    """The light PreToolUse path spools its call instead of writing a row; the wait it answers
    ends at once, not at the next fold some other writer happens to run."""
    store = StateStore.open_default()
    store.close()  # checkpointed: the file's header says whose it is, so calls may be spooled
    _ask(100, message="Claude needs your permission to use Bash")
    assert SID in hook_waits(store, 0)
    raw = json.dumps(bash_payload("ls -la", session_id=SID)).encode()
    assert append(raw, 101.0), "the light call went to the spool"
    assert hook_waits(store, 0) == {}
