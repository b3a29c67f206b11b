"""The optional dispatch guard on PreToolUse[Agent|Task]: deny at the configured limit."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from claude_lines import ClaudeTree, Lines, hook_payload
from swarmdeck.hooks.payload import HookInput
from swarmdeck.hooks.record import record_event

SID = "bbbb2222-0000-4000-8000-000000000010"


def _limit(home: Path, n: int) -> None:
    (home / "config.toml").write_text(f"[hooks]\nmax_running_subagents = {n}\n")


def _transcript(home: Path, running: int, deciding: str | None = None) -> Path:
    tree = ClaudeTree(home / "claude")
    main = Lines(SID)
    main.prompt("fan out", 0)
    for n in range(running):
        main.agent(f"toolu_r{n}", f"part {n}", f"Part {n}.", 1 + n)
    main.agent("toolu_old", "finished", "Finished part.", 1)
    main.foreground_done("toolu_old", "aold", 5)
    if deciding:
        main.agent(deciding, "the new one", "New part.", 20)
    return tree.write_main(main)


def _started(session: str, agents: dict[str, float]) -> None:
    """SubagentStart events of another session, recorded at the given times."""
    for agent, started in agents.items():
        payload = hook_payload("SubagentStart", session_id=session, agent_id=agent,
                               agent_type="Explore")
        record_event(HookInput("SubagentStart", payload), now=started)


def _dispatch(run_hook, transcript: Path, tool_use_id: str = "toolu_new", name: str = "Agent"):
    payload = hook_payload(
        "PreToolUse",
        session_id=SID,
        transcript_path=str(transcript),
        tool_name=name,
        tool_input={"description": "the new one", "prompt": "New part.",
                    "subagent_type": "general-purpose"},
        tool_use_id=tool_use_id,
    )
    done = run_hook("pre-tool-use", payload)
    assert done.returncode == 0, done.stderr
    return done.answer


def test_dispatch_at_the_limit_is_denied_with_a_reason(run_hook, isolated_home: Path) -> None:
    _limit(isolated_home, 2)
    answer = _dispatch(run_hook, _transcript(isolated_home, running=2))
    assert list(answer) == ["hookSpecificOutput"]
    output = answer["hookSpecificOutput"]
    assert sorted(output) == ["hookEventName", "permissionDecision", "permissionDecisionReason"]
    assert output["hookEventName"] == "PreToolUse"
    assert output["permissionDecision"] == "deny"
    reason = output["permissionDecisionReason"]
    assert "2 subagents are already running" in reason
    assert "hooks.max_running_subagents is 2" in reason
    assert '"part 0"' in reason and '"part 1"' in reason


def test_old_task_tool_name_is_guarded_too(run_hook, isolated_home: Path) -> None:
    _limit(isolated_home, 1)
    answer = _dispatch(run_hook, _transcript(isolated_home, running=1), name="Task")
    assert answer["hookSpecificOutput"]["permissionDecision"] == "deny"


def test_below_the_limit_the_dispatch_goes_through(run_hook, isolated_home: Path) -> None:
    _limit(isolated_home, 3)
    assert _dispatch(run_hook, _transcript(isolated_home, running=2)) is None


def test_the_call_being_decided_is_not_counted(run_hook, isolated_home: Path) -> None:
    _limit(isolated_home, 2)
    transcript = _transcript(isolated_home, running=1, deciding="toolu_new")
    assert _dispatch(run_hook, transcript, tool_use_id="toolu_new") is None


def test_a_dispatch_with_no_transcript_yet_and_its_hook_record_count_once(
    run_hook, isolated_home: Path
) -> None:
    _limit(isolated_home, 2)
    transcript = _transcript(isolated_home, running=1)
    run_hook("subagent-start", hook_payload("SubagentStart", session_id=SID, agent_id="apart0",
                                            agent_type="general-purpose"))
    assert _dispatch(run_hook, transcript) is None


def test_guard_is_off_by_default(run_hook, isolated_home: Path) -> None:
    assert _dispatch(run_hook, _transcript(isolated_home, running=6)) is None


def test_subagents_of_other_live_sessions_count(run_hook, isolated_home: Path) -> None:
    _limit(isolated_home, 2)
    tree = ClaudeTree(isolated_home / "claude")
    other = "cccc3333-0000-4000-8000-000000000011"
    tree.write_pid_file(os.getpid(), other)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    gone = "dddd4444-0000-4000-8000-000000000012"
    tree.write_pid_file(dead.pid, gone)
    for session, agent in ((other, "aother"), (gone, "agone")):
        run_hook("subagent-start", hook_payload("SubagentStart", session_id=session,
                                                agent_id=agent, agent_type="Explore"))
    answer = _dispatch(run_hook, _transcript(isolated_home, running=1))
    reason = answer["hookSpecificOutput"]["permissionDecisionReason"]
    assert "aother (Explore) in session cccc3333" in reason
    assert "agone" not in reason


def test_without_pid_files_only_recent_agents_of_other_sessions_count(
    run_hook, isolated_home: Path
) -> None:
    """Claude Code versions that write no `sessions/` folder: another session's hook agent
    counts while its session is recent, and a stale one (its stop never recorded, its session
    silent since) does not."""
    _limit(isolated_home, 2)
    now = time.time()
    other, silent = "eeee5555-0000-4000-8000-000000000013", "eeee5555-0000-4000-8000-000000000017"
    _started(other, {"arecent": now - 60})
    _started(silent, {"astale": now - 3 * 3600})
    answer = _dispatch(run_hook, _transcript(isolated_home, running=1))
    assert not (isolated_home / "claude" / "sessions").exists()
    reason = answer["hookSpecificOutput"]["permissionDecisionReason"]
    assert "arecent (Explore) in session eeee5555" in reason
    assert "astale" not in reason


def test_agents_older_than_their_sessions_live_process_do_not_count(
    run_hook, isolated_home: Path
) -> None:
    """A resumed session's hook events still hold the agents its last process started."""
    _limit(isolated_home, 2)
    now = time.time()
    other = "ffff6666-0000-4000-8000-000000000014"
    ClaudeTree(isolated_home / "claude").write_pid_file(os.getpid(), other,
                                                       startedAt=int(now * 1000))
    _started(other, {"aghost": now - 3600, "afresh": now})
    answer = _dispatch(run_hook, _transcript(isolated_home, running=1))
    reason = answer["hookSpecificOutput"]["permissionDecisionReason"]
    assert "afresh (Explore) in session ffff6666" in reason
    assert "aghost" not in reason


def test_one_running_subagent_is_said_in_the_singular(run_hook, isolated_home: Path) -> None:
    _limit(isolated_home, 1)
    answer = _dispatch(run_hook, _transcript(isolated_home, running=1))
    reason = answer["hookSpecificOutput"]["permissionDecisionReason"]
    assert "1 subagent is already running, the limit" in reason
    assert "1 subagents" not in reason


def _event(session: str, at: float, event: str = "PostToolUse", **fields) -> None:
    payload = hook_payload(event, session_id=session, **fields)
    record_event(HookInput(event, payload), now=at)


def test_without_pid_files_a_quiet_sessions_subagent_stops_counting_after_30_minutes(
    run_hook, isolated_home: Path
) -> None:
    """Where Claude Code writes no pid files, another session may be running while it was
    active lately, as the Agents panel judges it: a hook event in the last 30 minutes. A
    subagent whose stop was never recorded, in a session silent since, no longer counts."""
    _limit(isolated_home, 2)
    now = time.time()
    quiet, busy = "abab7777-0000-4000-8000-000000000015", "cdcd8888-0000-4000-8000-000000000016"
    _started(quiet, {"aquiet": now - 45 * 60})
    _started(busy, {"abusy": now - 45 * 60})
    _event(busy, now - 5 * 60, tool_name="Bash", agent_id="abusy",
           tool_input={"command": "make"}, tool_use_id="toolu_b1")
    answer = _dispatch(run_hook, _transcript(isolated_home, running=1))
    reason = answer["hookSpecificOutput"]["permissionDecisionReason"]
    assert "abusy (Explore) in session cdcd8888" in reason
    assert "aquiet" not in reason
    assert "2 subagents are already running" in reason
    assert ("Another session's subagent counts while that session is live: its Claude Code "
            "process runs, or, where Claude Code writes no pid files, it had a hook event in "
            "the last 30 min.") in reason


def test_the_guard_counts_the_hook_agents_the_agents_panel_shows_at_the_window_edge(
    run_hook, isolated_home: Path
) -> None:
    """The guard judges other sessions' hook agents as the Agents panel does: the same look-back
    (hook_activity.HOOK_AGENT_WINDOW) for both, so neither counts an agent the other does not."""
    from swarmdeck.probes.claude.hook_activity import HOOK_AGENT_WINDOW
    from swarmdeck.probes.claude.sessions import SessionsProbe, sessions_with_hooks
    from swarmdeck.state import StateStore

    _limit(isolated_home, 2)
    now = time.time()
    other = "abab7777-0000-4000-8000-000000000018"
    tree = ClaudeTree(isolated_home / "claude")
    main = Lines(other)
    main.prompt("long work", 0)
    tree.write_main(main)
    tree.write_pid_file(os.getpid(), other, startedAt=int((now - 3 * HOOK_AGENT_WINDOW) * 1000))
    _started(other, {"ainside": now - HOOK_AGENT_WINDOW + 600,
                     "aoutside": now - HOOK_AGENT_WINDOW - 600})
    answer = _dispatch(run_hook, _transcript(isolated_home, running=1))
    reason = answer["hookSpecificOutput"]["permissionDecisionReason"]
    assert "ainside (Explore) in session abab7777" in reason
    assert "aoutside" not in reason
    sessions = sessions_with_hooks(SessionsProbe(isolated_home / "claude"),
                                   StateStore.open_default())
    [shown] = [session for session in sessions if session.session_id == other]
    assert [agent.agent_id for agent in shown.hook_agents] == ["ainside"]
