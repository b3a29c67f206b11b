"""PostToolUse and SessionStart tell a session about the watchdog's findings on it."""

from __future__ import annotations

import time

from claude_lines import hook_payload
from swarmdeck.state import StateStore

SID = "bbbb2222-0000-4000-8000-000000000002"
OTHER = "cccc3333-0000-4000-8000-000000000003"


def _finding(session: str, rule: str = "wait_loop_without_timeout") -> None:
    store = StateStore.open_default()
    now = time.time()
    with store.transaction() as conn:
        conn.execute(
            "INSERT INTO findings (key, rule, subject, severity, message, advice, session_id,"
            " first_seen_at, last_seen_at, fired_at) VALUES (?, ?, 'session bbbb2222: while',"
            " 'warning', 'a wait loop with no timeout', 'bound it with timeout', ?, ?, ?, ?)",
            (f"{rule}:{session}", rule, session, now, now, now),
        )
    store.close()


def _post(run_hook, session: str = SID):
    payload = hook_payload("PostToolUse", session_id=session, tool_name="Bash",
                           tool_input={"command": "ls"}, tool_response={"stdout": ""},
                           tool_use_id="toolu_x")
    done = run_hook("post-tool-use", payload)
    assert done.returncode == 0, done.stderr
    return done


def test_post_tool_use_says_a_new_finding_once(run_hook) -> None:
    _post(run_hook)
    time.sleep(0.01)
    _finding(SID)
    first = _post(run_hook)
    assert "wait_loop_without_timeout" in first.context and "bound it with timeout" in first.context
    assert _post(run_hook).context == "", "said once, not after every call"


def test_post_tool_use_says_nothing_of_another_sessions_findings(run_hook) -> None:
    _finding(OTHER)
    assert _post(run_hook).context == ""


def test_session_start_lists_the_sessions_open_findings(run_hook, tmp_path) -> None:
    _finding(SID)
    payload = hook_payload("SessionStart", session_id=SID, source="compact", cwd=str(tmp_path),
                           transcript_path=str(tmp_path / "missing.jsonl"))
    done = run_hook("session-start", payload)
    assert done.returncode == 0, done.stderr
    assert "Watchdog findings about this session (1)" in done.context
