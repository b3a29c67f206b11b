"""Subagent statuses from transcript trees in every layout Claude Code has written."""

from __future__ import annotations

import json
import os
from pathlib import Path

from claude_lines import ClaudeTree, Lines, append, iso
from swarmdeck.probes.claude.sessions import SessionsProbe, read_session

SID = "5555aaaa-0000-4000-8000-000000000001"


def _probe(tmp_path: Path) -> SessionsProbe:
    return SessionsProbe(tmp_path / "claude")


def _by_id(probe: SessionsProbe) -> dict[str, dict]:
    sessions = probe.refresh()
    assert len(sessions) == 1
    return {s.id: s.to_json() for s in sessions[0].subagents}


def test_foreground_agent_without_result_is_running_and_shows_its_tool(tmp_path: Path) -> None:
    tree = ClaudeTree(tmp_path / "claude")
    main = Lines(SID)
    main.prompt("map the repo", 0)
    main.agent("toolu_fg1", "Survey the web module", "Survey src/web and report.", 5)
    tree.write_main(main)
    agent = Lines(SID, sidechain=True, agent_id="a1f")
    agent.prompt("Survey src/web and report.", 6)
    agent.tool_use("toolu_in1", "Bash", {"command": "ls src/web", "description": "list"}, 8)
    tree.write_agent(agent, meta={"agentType": "Explore", "description": "Survey the web module"})

    subs = _by_id(_probe(tmp_path))
    assert list(subs) == ["a1f"]
    sub = subs["a1f"]
    assert sub["status"] == "running"
    assert sub["description"] == "Survey the web module"
    assert sub["type"] == "general-purpose"
    assert sub["tool_in_flight"] == "Bash"
    assert sub["tool_in_flight_summary"] == "ls src/web"
    assert sub["tool_calls"] == 1
    assert sub["parent_id"] is None


def test_foreground_results_completed_failed_and_interrupted(tmp_path: Path) -> None:
    tree = ClaudeTree(tmp_path / "claude")
    main = Lines(SID)
    main.prompt("go", 0)
    main.agent("toolu_ok", "ok", "p-ok", 1)
    main.agent("toolu_bad", "bad", "p-bad", 1)
    main.agent("toolu_int", "int", "p-int", 1)
    main.foreground_done("toolu_ok", "aok", 30, tokens=7777, tool_uses=4)
    main.result("toolu_bad", "<tool_use_error>Agent type 'nope' not found</tool_use_error>", 31,
                is_error=True)
    interrupted = [{"type": "text", "text": "[Request interrupted by user for tool use]"}]
    main.result("toolu_int", interrupted, 32, is_error=True)
    tree.write_main(main)

    subs = _by_id(_probe(tmp_path))
    assert subs["aok"]["status"] == "completed"
    assert subs["aok"]["tokens"] == 7777
    assert subs["aok"]["tool_calls"] == 4
    assert subs["toolu_bad"]["status"] == "failed"
    assert subs["toolu_int"]["status"] == "interrupted"


def test_interrupt_marker_without_result_ends_the_waiting_dispatch(tmp_path: Path) -> None:
    tree = ClaudeTree(tmp_path / "claude")
    main = Lines(SID)
    main.prompt("go", 0)
    main.agent("toolu_x", "x", "p-x", 1)
    main.user_blocks([{"type": "text", "text": "[Request interrupted by user for tool use]"}], 9)
    tree.write_main(main)
    assert _by_id(_probe(tmp_path))["toolu_x"]["status"] == "interrupted"


def test_async_launch_is_not_completion_and_duplicate_notifications_count_once(
    tmp_path: Path,
) -> None:
    tree = ClaudeTree(tmp_path / "claude")
    main = Lines(SID, version="2.1.232")
    main.prompt("review in the background", 0)
    main.agent("toolu_bg", "Review the diff", "Review it.", 1, subagent_type="code-reviewer")
    main.async_launched("toolu_bg", "abg1", 2)
    path = tree.write_main(main)
    probe = _probe(tmp_path)

    sub = _by_id(probe)["abg1"]
    assert sub["status"] == "running"
    assert sub["background"] is True
    assert sub["type"] == "code-reviewer"

    later = Lines(SID)
    later.notification("abg1", "toolu_bg", "completed", 300)
    later.notification("abg1", "toolu_bg", "completed", 301, operation="remove")
    later.notification_turn("abg1", "toolu_bg", "completed", 302)
    append(path, later.dumps())
    session = probe.refresh()[0]
    sub = session.subagents[0].to_json()
    assert sub["status"] == "completed"
    assert sub["tokens"] == 5200
    assert sub["ended_at"] == session.subagents[0].ended_at
    one_notice = len(later.lines[0]["content"].encode())
    assert session.subagents[0].result_bytes < 2 * one_notice + 400


def test_background_notification_failed_and_killed(tmp_path: Path) -> None:
    tree = ClaudeTree(tmp_path / "claude")
    main = Lines(SID)
    main.prompt("go", 0)
    for n in ("f", "k"):
        main.agent(f"toolu_{n}", n, f"prompt {n}", 1, background=True)
        main.async_launched(f"toolu_{n}", f"a{n}", 2)
    main.notification("af", "toolu_f", "failed", 50)
    main.notification("ak", None, "killed", 60, summary='Agent "k" was stopped by user')
    tree.write_main(main)
    subs = _by_id(_probe(tmp_path))
    assert subs["af"]["status"] == "failed"
    assert subs["ak"]["status"] == "interrupted"


def test_shell_task_notifications_do_not_touch_agents(tmp_path: Path) -> None:
    tree = ClaudeTree(tmp_path / "claude")
    main = Lines(SID)
    main.prompt("go", 0)
    main.agent("toolu_bg", "bg", "bg prompt", 1)
    main.async_launched("toolu_bg", "abg", 2)
    main.tool_use("toolu_sh", "Bash", {"command": "sleep 300", "run_in_background": True}, 3)
    main.result("toolu_sh", "Command running in background with ID: b2f8b9", 3)
    main.notification("b2f8b9", "toolu_sh", "completed", 20, summary="Background command done")
    tree.write_main(main)
    subs = _by_id(_probe(tmp_path))
    assert list(subs) == ["abg"]
    assert subs["abg"]["status"] == "running"


def test_parallel_agent_calls_split_over_lines(tmp_path: Path) -> None:
    tree = ClaudeTree(tmp_path / "claude")
    main = Lines(SID)
    main.prompt("fan out", 0)
    for n in range(3):
        main.agent(f"toolu_p{n}", f"part {n}", f"Do part {n}.", 1 + n * 0.01, message_id="msg_fan")
    main.foreground_done("toolu_p0", "ap0", 40)
    main.foreground_done("toolu_p2", "ap2", 45)
    tree.write_main(main)
    probe = _probe(tmp_path)
    subs = _by_id(probe)
    assert subs["ap0"]["status"] == "completed"
    assert subs["ap2"]["status"] == "completed"
    assert subs["toolu_p1"]["status"] == "running"
    health = probe.sessions()[0].health
    assert health.dispatches == 3
    assert health.peak_parallel == 3


def test_old_task_tool_with_flat_agent_files(tmp_path: Path) -> None:
    tree = ClaudeTree(tmp_path / "claude")
    main = Lines(SID, version="2.0.61")
    main.prompt("go", 0)
    main.agent("toolu_t1", "Find usages", "Find all usages of foo.", 1, name="Task",
               subagent_type="Explore")
    main.agent("toolu_t2", "Check docs", "Check the docs.", 2, name="Task")
    main.result("toolu_t1", [{"type": "text", "text": "found 3"}], 30,
                tool_use_result={"status": "completed", "prompt": "Find all usages of foo."})
    tree.write_main(main)
    for agent_id, prompt, calls in (("0f1e2d", "Find all usages of foo.", 2),
                                    ("9a8b7c", "Check the docs.", 1)):
        agent = Lines(SID, sidechain=True, agent_id=agent_id, version="2.0.61")
        agent.prompt(prompt, 1.5)
        for n in range(calls):
            agent.tool_use(f"toolu_{agent_id}_{n}", "Grep", {"pattern": "foo"}, 2 + n)
        tree.write_flat_agent(agent)

    subs = _by_id(_probe(tmp_path))
    assert subs["0f1e2d"]["status"] == "completed"
    assert subs["0f1e2d"]["type"] == "Explore"
    assert subs["0f1e2d"]["tool_calls"] == 2
    assert subs["9a8b7c"]["status"] == "running"
    assert subs["9a8b7c"]["tool_in_flight"] == "Grep"


def test_inline_sidechain_format(tmp_path: Path) -> None:
    tree = ClaudeTree(tmp_path / "claude")
    main = Lines(SID, version="1.0.51")
    main.prompt("go", 0)
    main.agent("toolu_s1", "Scan", "Scan the tree.", 1, name="Task")
    main.agent("toolu_s2", "Lint", "Lint the tree.", 1, name="Task")
    side1 = main.prompt("Scan the tree.", 2, sidechain=True, parent=None)
    side2 = main.prompt("Lint the tree.", 2, sidechain=True, parent=None)
    main.tool_use("toolu_s1_in", "Glob", {"pattern": "**/*.py"}, 3, sidechain=True,
                  parent=side1["uuid"])
    main.tool_use("toolu_s2_in", "Bash", {"command": "ruff check ."}, 4, sidechain=True,
                  parent=side2["uuid"])
    main.result("toolu_s1_in", "a.py", 5, sidechain=True)
    main.text("Scan finished.", 6, sidechain=True)
    main.result("toolu_s1", "Scan finished.", 7)
    tree.write_main(main)

    subs = _by_id(_probe(tmp_path))
    assert subs["toolu_s1"]["status"] == "completed"
    assert subs["toolu_s2"]["status"] == "running"
    assert subs["toolu_s2"]["tool_in_flight"] == "Bash"
    assert subs["toolu_s1"]["tool_calls"] == 1


def test_nested_subagents_name_their_parent(tmp_path: Path) -> None:
    tree = ClaudeTree(tmp_path / "claude")
    main = Lines(SID)
    main.prompt("go", 0)
    main.agent("toolu_outer", "Outer", "Outer work.", 1)
    tree.write_main(main)
    outer = Lines(SID, sidechain=True, agent_id="aout")
    outer.prompt("Outer work.", 2)
    outer.agent("toolu_inner", "Inner", "Inner work.", 3, subagent_type="Plan")
    tree.write_agent(outer, meta={"agentType": "general-purpose", "spawnDepth": 1})
    inner = Lines(SID, sidechain=True, agent_id="ainn")
    inner.prompt("Inner work.", 4)
    inner.text("Planned.", 5)
    tree.write_agent(inner, meta={"agentType": "Plan", "spawnDepth": 2}, nested_in="aout")
    subs = _by_id(_probe(tmp_path))
    assert subs["aout"]["parent_id"] is None
    assert subs["ainn"]["parent_id"] == "aout"
    assert subs["ainn"]["type"] == "Plan"
    assert subs["aout"]["status"] == "running"


def test_meta_tool_use_id_links_a_running_agent_with_a_reworded_prompt(tmp_path: Path) -> None:
    tree = ClaudeTree(tmp_path / "claude")
    main = Lines(SID)
    main.prompt("go", 0)
    main.agent("toolu_m", "Meta linked", "Original prompt.", 1)
    tree.write_main(main)
    agent = Lines(SID, sidechain=True, agent_id="amet")
    agent.prompt("Original prompt, with a preamble added by the harness.", 2)
    agent.tool_use("toolu_m_in", "Read", {"file_path": "/work/proj/a.py"}, 3)
    tree.write_agent(agent, meta={"agentType": "Explore", "description": "Meta linked",
                                  "toolUseId": "toolu_m"})
    subs = _by_id(_probe(tmp_path))
    assert list(subs) == ["amet"]
    assert subs["amet"]["tool_in_flight_summary"] == "/work/proj/a.py"


def test_progress_lines_link_a_dispatch_to_its_agent(tmp_path: Path) -> None:
    tree = ClaudeTree(tmp_path / "claude")
    main = Lines(SID, version="2.1.20")
    main.prompt("go", 0)
    main.agent("toolu_pr", "Progress", "Progress prompt.", 1, name="Task")
    main.progress("toolu_pr", "apr", 5)
    tree.write_main(main)
    agent = Lines(SID, sidechain=True, agent_id="apr")
    agent.prompt("A different first message.", 2)
    agent.tool_use("toolu_pr_in", "Bash", {"command": "make"}, 3)
    tree.write_agent(agent)
    subs = _by_id(_probe(tmp_path))
    assert list(subs) == ["apr"]
    assert subs["apr"]["tool_in_flight"] == "Bash"


def test_resumed_agent_runs_again_after_its_notification(tmp_path: Path) -> None:
    tree = ClaudeTree(tmp_path / "claude")
    main = Lines(SID)
    main.prompt("go", 0)
    main.agent("toolu_r", "r", "r prompt", 1)
    main.async_launched("toolu_r", "ares", 2)
    main.notification("ares", "toolu_r", "completed", 50)
    main.tool_use("toolu_send", "SendMessage", {"to": "ares", "message": "carry on"}, 60)
    main.result("toolu_send", "Resuming agent ares", 61,
                tool_use_result={"success": True, "message": "Resuming agent ares",
                                 "resumedAgentId": "ares"})
    path = tree.write_main(main)
    probe = _probe(tmp_path)
    assert _by_id(probe)["ares"]["status"] == "running"
    again = Lines(SID)
    again.notification("ares", "toolu_r", "completed", 200)
    append(path, again.dumps())
    assert probe.refresh()[0].subagents[0].status == "completed"


def test_agent_file_without_dispatch_is_listed_and_warmup_is_not(tmp_path: Path) -> None:
    tree = ClaudeTree(tmp_path / "claude")
    main = Lines(SID)
    main.prompt("go", 0)
    tree.write_main(main)
    warm = Lines(SID, sidechain=True, agent_id="warm1")
    warm.prompt("Warmup", 0)
    warm.text("ok", 1)
    tree.write_agent(warm)
    lone = Lines(SID, sidechain=True, agent_id="lone1")
    lone.prompt("Workflow step one.", 2)
    lone.text("Step done.", 3)
    tree.write_agent(lone, meta={"agentType": "workflow-step"})
    subs = _by_id(_probe(tmp_path))
    assert list(subs) == ["lone1"]
    assert subs["lone1"]["status"] == "completed"
    assert subs["lone1"]["type"] == "workflow-step"


def test_session_fields_and_tool_in_flight(tmp_path: Path) -> None:
    tree = ClaudeTree(tmp_path / "claude")
    main = Lines(SID, cwd="/work/proj", branch="feat/x")
    main.prompt("build it", 0)
    main.tool_use("toolu_b", "Bash", {"command": "make -j8", "description": "build"}, 10)
    main.raw({"type": "ai-title", "aiTitle": "Build the thing", "sessionId": SID})
    tree.write_main(main)
    session = _probe(tmp_path).refresh()[0]
    data = session.to_json()
    assert data["session_id"] == SID
    assert data["cwd"] == "/work/proj"
    assert data["git_branch"] == "feat/x"
    assert data["title"] == "Build the thing"
    assert data["tool_in_flight"] == "Bash"
    assert data["tool_in_flight_summary"] == "make -j8"
    assert data["live"] is False
    assert data["last_activity_at"] is not None
    json.dumps(data)


def test_read_session_reads_one_session_by_its_transcript_path(tmp_path: Path) -> None:
    tree = ClaudeTree(tmp_path / "claude")
    main = Lines(SID)
    main.prompt("go", 0)
    main.agent("toolu_one", "one", "one prompt", 1)
    path = tree.write_main(main)
    other = Lines("6666bbbb-0000-4000-8000-000000000002")
    other.prompt("other", 0)
    tree.write_main(other)
    session = read_session(path, tmp_path / "claude")
    assert session is not None
    assert session.session_id == SID
    assert [s.status for s in session.running_subagents()] == ["running"]
    assert len(SessionsProbe(tmp_path / "claude").refresh()) == 2
    assert read_session(tmp_path / "nope.jsonl", tmp_path / "claude") is None


def test_old_sessions_beyond_the_newest_are_not_read_unless_live(tmp_path: Path) -> None:
    tree = ClaudeTree(tmp_path / "claude")
    sids = [f"{n:08d}-0000-4000-8000-000000000000" for n in range(4)]
    for n, sid in enumerate(sids):
        main = Lines(sid)
        main.prompt("old", 0)
        path = tree.write_main(main)
        old = path.stat().st_mtime - 10 * 86400 - n * 60
        os.utime(path, (old, old))
    probe = SessionsProbe(tmp_path / "claude", keep_newest=2)
    assert [s.session_id for s in probe.refresh()] == sids[:2]
    tree.write_pid_file(os.getpid(), sids[3])
    sessions = SessionsProbe(tmp_path / "claude", keep_newest=2).refresh()
    assert sessions[0].session_id == sids[3] and sessions[0].live
    assert {s.session_id for s in sessions} == {sids[0], sids[1], sids[3]}


def test_progress_lines_relay_a_subagent_without_its_own_file(tmp_path: Path) -> None:
    tree = ClaudeTree(tmp_path / "claude")
    main = Lines(SID, version="2.1.20")
    main.prompt("go", 0)
    main.agent("toolu_rel", "Relayed", "Relayed prompt.", 1, name="Task")
    for n, (kind, block) in enumerate([
        ("assistant", {"type": "tool_use", "id": "toolu_sub1", "name": "Grep",
                       "input": {"pattern": "TODO"}}),
        ("user", {"type": "tool_result", "tool_use_id": "toolu_sub1", "content": "3 hits"}),
        ("assistant", {"type": "tool_use", "id": "toolu_sub2", "name": "Read",
                       "input": {"file_path": "/work/proj/x.py"}}),
    ]):
        main.raw({
            "type": "progress", "parentToolUseID": "toolu_rel", "toolUseID": f"agent_msg_{n}",
            "timestamp": iso(2 + n), "sessionId": SID, "uuid": f"p{n}",
            "data": {"type": "agent_progress", "agentId": "arel", "prompt": "Relayed prompt.",
                     "message": {"type": kind, "timestamp": iso(2 + n),
                                 "message": {"role": kind, "content": [block]}}},
        })
    tree.write_main(main)
    sub = _by_id(_probe(tmp_path))["arel"]
    assert sub["status"] == "running"
    assert sub["tool_calls"] == 2
    assert sub["tool_in_flight"] == "Read"
    assert sub["tool_in_flight_summary"] == "/work/proj/x.py"


def test_notification_ends_a_dispatch_whose_result_line_is_missing(tmp_path: Path) -> None:
    tree = ClaudeTree(tmp_path / "claude")
    main = Lines(SID)
    main.prompt("go", 0)
    main.agent("toolu_lost", "lost result", "Lost.", 1)
    main.notification("alost", "toolu_lost", "completed", 60)
    tree.write_main(main)
    assert _by_id(_probe(tmp_path))["toolu_lost"]["status"] == "completed"


def test_a_subagents_own_transcript_path_reads_its_whole_session(tmp_path: Path) -> None:
    """A hook fired inside a subagent may name that subagent's file: its siblings count too."""
    tree = ClaudeTree(tmp_path / "claude")
    main = Lines(SID)
    main.prompt("go", 0)
    main.agent("toolu_a", "a", "A work.", 1)
    main.agent("toolu_b", "b", "B work.", 1)
    tree.write_main(main)
    for agent_id, prompt in (("aa1", "A work."), ("ab2", "B work.")):
        side = Lines(SID, sidechain=True, agent_id=agent_id)
        side.prompt(prompt, 2)
        tree.write_agent(side)
    nested = tree.agent_path(SID, "ab2")
    session = read_session(nested, tmp_path / "claude")
    assert session is not None and session.session_id == SID
    assert sorted(s.id for s in session.subagents) == ["aa1", "ab2"]


def test_a_tool_call_written_twice_counts_once(tmp_path: Path) -> None:
    """A line written again (a retried write) neither adds a call nor reopens a dispatch."""
    tree = ClaudeTree(tmp_path / "claude")
    main = Lines(SID)
    main.prompt("go", 0)
    call = main.agent("toolu_twice", "twice", "Twice.", 1)
    main.foreground_done("toolu_twice", "atwice", 20, tool_uses=1)
    main.raw(dict(call))
    tree.write_main(main)
    sub = _by_id(_probe(tmp_path))["atwice"]
    assert sub["status"] == "completed"
    assert _probe(tmp_path).refresh()[0].health.dispatches == 1


def test_one_result_line_with_two_results_keeps_its_extra_to_neither(tmp_path: Path) -> None:
    """`toolUseResult` describes one result; a line holding two cannot say whose it is."""
    tree = ClaudeTree(tmp_path / "claude")
    main = Lines(SID)
    main.prompt("go", 0)
    main.agent("toolu_one", "one", "One.", 1)
    main.agent("toolu_two", "two", "Two.", 1)
    main.user_blocks([
        {"type": "tool_result", "tool_use_id": "toolu_one", "content": "one done"},
        {"type": "tool_result", "tool_use_id": "toolu_two", "content": "two done"},
    ], 30, toolUseResult={"status": "async_launched", "agentId": "aone", "isAsync": True})
    tree.write_main(main)
    subs = _by_id(_probe(tmp_path))
    assert sorted(subs) == ["toolu_one", "toolu_two"]
    assert {s["status"] for s in subs.values()} == {"completed"}
