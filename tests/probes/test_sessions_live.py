"""Which sessions are live, and what a session that is over does to its running subagents."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from claude_lines import BASE, ClaudeTree, Lines, age
from swarmdeck.probes.claude.live_sessions import pid_files
from swarmdeck.probes.claude.sessions import SessionsProbe, waiting_for_person
from swarmdeck.probes.procs import start_ticks

SID = "8888dddd-0000-4000-8000-000000000004"


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def _running_agent(tree: ClaudeTree) -> Path:
    main = Lines(SID)
    main.prompt("go", 0)
    main.agent("toolu_r", "r", "r prompt", 1)
    return tree.write_main(main)


def test_pid_file_of_a_running_process_makes_its_session_live(tmp_path: Path) -> None:
    tree = ClaudeTree(tmp_path / "claude")
    tree.write_pid_file(os.getpid(), SID, procStart=str(start_ticks(os.getpid())),
                        status="waiting", waitingFor="permission prompt")
    live = pid_files(tmp_path / "claude").live
    assert list(live) == [SID]
    assert live[SID].status == "waiting"
    assert live[SID].waiting_for == "permission prompt"


def test_pid_file_of_a_reused_pid_is_not_live(tmp_path: Path) -> None:
    tree = ClaudeTree(tmp_path / "claude")
    tree.write_pid_file(os.getpid(), SID, procStart=str(start_ticks(os.getpid()) - 1))
    files = pid_files(tmp_path / "claude")
    assert files.live == {}
    assert files.ended == frozenset({SID})


def test_dead_pid_and_broken_files_are_not_live(tmp_path: Path) -> None:
    tree = ClaudeTree(tmp_path / "claude")
    tree.write_pid_file(_dead_pid(), SID)
    (tmp_path / "claude" / "sessions" / "123.json").write_text("{not json")
    (tmp_path / "claude" / "sessions" / "124.json").write_text('{"pid": 124}')
    (tmp_path / "claude" / "sessions" / "125.abc.key").write_text("secret")
    files = pid_files(tmp_path / "claude")
    assert files.live == {}
    assert SID in files.ended


def test_live_session_keeps_its_subagents_running(tmp_path: Path) -> None:
    tree = ClaudeTree(tmp_path / "claude")
    path = _running_agent(tree)
    age(path, 3 * 3600)
    tree.write_pid_file(os.getpid(), SID)
    session = SessionsProbe(tmp_path / "claude").refresh()[0]
    assert session.live and session.pid == os.getpid()
    assert session.subagents[0].status == "running"


def test_session_whose_process_died_has_its_running_subagents_interrupted(tmp_path: Path) -> None:
    tree = ClaudeTree(tmp_path / "claude")
    _running_agent(tree)
    tree.write_pid_file(_dead_pid(), SID)
    session = SessionsProbe(tmp_path / "claude").refresh()[0]
    assert not session.live
    assert session.subagents[0].status == "interrupted"


def test_session_seen_live_then_gone_is_over(tmp_path: Path) -> None:
    tree = ClaudeTree(tmp_path / "claude")
    _running_agent(tree)
    pid_file = tree.write_pid_file(os.getpid(), SID)
    probe = SessionsProbe(tmp_path / "claude")
    assert probe.refresh()[0].subagents[0].status == "running"
    pid_file.unlink()
    session = probe.refresh()[0]
    assert not session.live
    assert session.subagents[0].status == "interrupted"


def test_without_any_pid_files_a_quiet_session_keeps_its_transcript_statuses(
    tmp_path: Path,
) -> None:
    """A Claude Code that writes no pid files at all (no `sessions/`) leaves liveness unknown."""
    tree = ClaudeTree(tmp_path / "claude")
    path = _running_agent(tree)
    age(path, 30 * 86400)
    session = SessionsProbe(tmp_path / "claude").refresh()[0]
    assert not session.live
    assert session.subagents[0].status == "running"


def test_a_subagent_of_an_ended_session_is_not_running(tmp_path: Path) -> None:
    """Pid files are written here (another session has one) but not for this session: it has
    ended, so nothing in it runs, in the JSON as in every view."""
    tree = ClaudeTree(tmp_path / "claude")
    _running_agent(tree)
    tree.write_pid_file(os.getpid(), "9999eeee-0000-4000-8000-000000000009")
    by_id = {s.session_id: s for s in SessionsProbe(tmp_path / "claude").refresh()}
    session = by_id[SID]
    assert not session.live
    assert session.subagents[0].status == "interrupted"
    assert session.to_json()["subagents"][0]["status"] == "interrupted"
    assert session.health.running == 0


def test_live_session_without_a_transcript_yet_is_listed(tmp_path: Path) -> None:
    tree = ClaudeTree(tmp_path / "claude")
    tree.write_pid_file(os.getpid(), SID, cwd="/work/other", name="fresh")
    sessions = SessionsProbe(tmp_path / "claude").refresh()
    assert [s.session_id for s in sessions] == [SID]
    data = sessions[0].to_json()
    assert data["live"] is True
    assert data["cwd"] == "/work/other"
    assert data["subagents"] == []
    assert data["transcript_path"].endswith("-work-other/" + SID + ".jsonl")


def test_a_resumed_session_does_not_show_the_previous_process_agents_as_running(
    tmp_path: Path,
) -> None:
    """Subagents die with the process that started them: after `claude --resume` the
    transcript still ends without their results, but the live process started after them."""
    tree = ClaudeTree(tmp_path / "claude")
    main = Lines(SID)
    main.prompt("go", 0)
    main.agent("toolu_bg_old", "old background", "Old bg.", 1, background=True)
    main.async_launched("toolu_bg_old", "aold1", 2)
    main.agent("toolu_fg_old", "old foreground", "Old fg.", 3)
    main.agent("toolu_bg_back", "resumed one", "Resumed.", 4, background=True)
    main.async_launched("toolu_bg_back", "aback", 5)
    main.tool_use("toolu_bash_old", "Bash", {"command": "make -j8"}, 6)
    main.prompt("carry on", 600)
    main.tool_use("toolu_send", "SendMessage", {"to": "aback", "message": "go on"}, 601)
    main.result("toolu_send", "resumed", 602, tool_use_result={
        "success": True, "resumedAgentId": "aback",
        "message": 'Agent "aback" was stopped (killed); resumed it in the background'})
    main.agent("toolu_bg_new", "new background", "New bg.", 603, background=True)
    main.async_launched("toolu_bg_new", "anew1", 604)
    tree.write_main(main)
    tree.write_pid_file(os.getpid(), SID, startedAt=int((BASE + 500) * 1000))

    session = SessionsProbe(tmp_path / "claude").refresh()[0]
    statuses = {s.id: s.status for s in session.subagents}
    assert statuses == {"aold1": "interrupted", "toolu_fg_old": "interrupted",
                        "aback": "running", "anew1": "running"}
    assert session.tool_in_flight is None
    assert session.health.running == 2


def test_a_waiting_session_says_since_when_from_its_pid_files_updated_at(tmp_path: Path) -> None:
    """`updatedAt` (epoch milliseconds, as `startedAt`) is when the process last changed its
    status: for a waiting session, when it began waiting."""
    tree = ClaudeTree(tmp_path / "claude")
    tree.write_pid_file(os.getpid(), SID, status="waiting", waitingFor="permission prompt",
                        updatedAt=int((BASE + 120) * 1000))
    tree.write_pid_file(1, "9999eeee-0000-4000-8000-000000000009", status="busy",
                        updatedAt=int((BASE + 60) * 1000))
    live = pid_files(tmp_path / "claude").live
    assert live[SID].updated_at == BASE + 120
    by_id = {s.session_id: s for s in SessionsProbe(tmp_path / "claude").refresh()}
    assert by_id[SID].waiting_since == BASE + 120
    assert by_id["9999eeee-0000-4000-8000-000000000009"].waiting_since is None


def test_a_session_that_starts_waiting_shows_so_at_the_next_refresh(tmp_path: Path) -> None:
    tree = ClaudeTree(tmp_path / "claude")
    _running_agent(tree)
    tree.write_pid_file(os.getpid(), SID, status="busy")
    probe = SessionsProbe(tmp_path / "claude")
    assert not probe.refresh()[0].needs_person
    tree.write_pid_file(os.getpid(), SID, status="waiting", waitingFor="a question",
                        updatedAt=int((BASE + 300) * 1000))
    session = probe.refresh()[0]
    assert session.needs_person and session.waiting_for == "a question"
    assert session.waiting_since == BASE + 300


def test_sessions_waiting_for_the_person_are_listed_oldest_first(tmp_path: Path) -> None:
    """Oldest wait first; a waiting session whose file does not say since when comes last."""
    tree = ClaudeTree(tmp_path / "claude")
    waits = {"1111": 300, "2222": 100, "3333": None, "4444": 200}
    sleepers = [subprocess.Popen(["sleep", "60"]) for _ in waits]
    try:
        for n, ((prefix, since), sleeper) in enumerate(zip(waits.items(), sleepers, strict=True)):
            fields = {} if since is None else {"updatedAt": int((BASE + since) * 1000)}
            tree.write_pid_file(sleeper.pid, f"{prefix}aaaa-0000-4000-8000-00000000000{n}",
                                status="waiting", cwd=f"/work/p{n}", **fields)
        tree.write_pid_file(os.getpid(), SID, status="busy")
        sessions = SessionsProbe(tmp_path / "claude").refresh()
    finally:
        for sleeper in sleepers:
            sleeper.kill()
            sleeper.wait()
    assert len(sessions) == 5
    waiting = [s.session_id[:4] for s in waiting_for_person(sessions)]
    assert waiting == ["2222", "4444", "1111", "3333"]
