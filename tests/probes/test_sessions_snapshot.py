"""Sessions in the snapshot JSON: the promised keys, and hook events ahead of transcripts."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from claude_lines import ClaudeTree, Lines
from swarmdeck.config import load_config
from swarmdeck.hooks.payload import HookInput
from swarmdeck.hooks.record import record_event
from swarmdeck.probes.claude.sessions import SessionsProbe
from swarmdeck.snapshot import take_snapshot
from swarmdeck.state import StateStore
from swarmdeck.views.sessions import subagent_counts

SID = "eeee5555-0000-4000-8000-000000000013"

SESSION_KEYS = {"session_id", "cwd", "live", "last_activity_at", "subagents"}
SUBAGENT_KEYS = {"id", "description", "type", "status", "started_at", "last_activity_at",
                 "parent_id"}


def _tree(home: Path) -> None:
    tree = ClaudeTree(home / "claude")
    main = Lines(SID)
    main.prompt("go", 0)
    main.agent("toolu_outer", "Outer", "Outer work.", 1)
    main.agent("toolu_done", "Done", "Done work.", 1)
    main.foreground_done("toolu_done", "adone", 30)
    tree.write_main(main)
    outer = Lines(SID, sidechain=True, agent_id="aout")
    outer.prompt("Outer work.", 2)
    outer.agent("toolu_inner", "Inner", "Inner work.", 3, subagent_type="Plan")
    tree.write_agent(outer)
    tree.write_pid_file(os.getpid(), SID)


def test_snapshot_lists_sessions_with_their_subagents(isolated_home: Path) -> None:
    _tree(isolated_home)
    store = StateStore.open_default()
    data = json.loads(json.dumps(take_snapshot(load_config(), store).to_json()))
    [session] = data["sessions"]
    assert set(session) >= SESSION_KEYS
    assert session["session_id"] == SID and session["live"] is True
    subagents = {s["id"]: s for s in session["subagents"]}
    for sub in subagents.values():
        assert set(sub) >= SUBAGENT_KEYS
        assert sub["status"] in ("running", "completed", "failed", "interrupted")
    assert subagents["adone"]["status"] == "completed"
    assert subagents["aout"]["status"] == "running"
    assert subagents["toolu_inner"]["parent_id"] == "aout"


def test_hook_events_show_a_subagent_before_its_transcript(isolated_home: Path) -> None:
    _tree(isolated_home)
    hook = HookInput(
        "SubagentStart",
        {"session_id": SID, "agent_id": "afresh", "agent_type": "Explore",
         "hook_event_name": "SubagentStart"},
    )
    record_event(hook, now=time.time())
    store = StateStore.open_default()
    probe = SessionsProbe()
    snapshot = take_snapshot(load_config(), store, sessions=probe).to_json()
    assert [a["id"] for a in snapshot["sessions"][0]["hook_running_agents"]] == ["afresh"]
    stop = HookInput("SubagentStop", {**hook.data, "hook_event_name": "SubagentStop"})
    record_event(stop, now=time.time())
    again = take_snapshot(load_config(), store, sessions=probe).to_json()
    assert again["sessions"][0]["hook_running_agents"] == []


def test_hook_agents_older_than_the_live_process_are_not_shown(isolated_home: Path) -> None:
    _tree(isolated_home)
    now = time.time()
    ClaudeTree(isolated_home / "claude").write_pid_file(os.getpid(), SID,
                                                       startedAt=int(now * 1000))
    for agent, at in (("aghost", now - 3600), ("afresh", now + 5)):
        record_event(HookInput("SubagentStart", {"session_id": SID, "agent_id": agent,
                                                 "agent_type": "Explore",
                                                 "hook_event_name": "SubagentStart"}), now=at)
    snapshot = take_snapshot(load_config(), StateStore.open_default()).to_json()
    [session] = snapshot["sessions"]
    assert [a["id"] for a in session["hook_running_agents"]] == ["afresh"]
    assert session["process_started_at"] == int(now * 1000) / 1000


def _started(agent_id: str) -> None:
    record_event(HookInput("SubagentStart", {"session_id": SID, "agent_id": agent_id,
                                             "agent_type": "Explore",
                                             "hook_event_name": "SubagentStart"}),
                 now=time.time())


def test_a_hook_only_subagent_stays_through_transcript_writes(isolated_home: Path) -> None:
    """The watcher's refresh after a write re-reads the session: the subagent known only from
    its hook events must still be there, not only in the next snapshot."""
    _tree(isolated_home)
    _started("afresh")
    store = StateStore.open_default()
    probe = SessionsProbe()
    take_snapshot(load_config(), store, sessions=probe)
    main = ClaudeTree(isolated_home / "claude").main_path(SID)
    for n in range(3):
        more = Lines(SID)
        more.prompt(f"more {n}", 100 + n)
        with open(main, "a") as handle:
            handle.write(more.dumps())
        [session] = probe.refresh([main])
        assert [a.agent_id for a in session.hook_agents] == ["afresh"]


def test_sessions_handed_out_are_never_changed_afterwards(isolated_home: Path) -> None:
    """A reader in another thread keeps what it was given: new hook facts make new objects."""
    _tree(isolated_home)
    store = StateStore.open_default()
    probe = SessionsProbe()
    [before] = take_snapshot(load_config(), store, sessions=probe).sessions
    generation = probe.generation
    _started("afresh")
    [after] = take_snapshot(load_config(), store, sessions=probe).sessions
    assert before.hook_agents == [] and [a.agent_id for a in after.hook_agents] == ["afresh"]
    assert probe.generation > generation


def test_a_dispatch_with_no_transcript_yet_and_its_hook_record_are_one_subagent(
    isolated_home: Path,
) -> None:
    """The Agent call is written, its SubagentStart hook came, its own file is not written
    yet: the sessions view counts it once, and the tree has no hook-only twin of it."""
    tree = ClaudeTree(isolated_home / "claude")
    main = Lines(SID)
    main.prompt("go", 0)
    main.agent("toolu_new", "Fresh", "Fresh work.", 1, subagent_type="Explore")
    tree.write_main(main)
    tree.write_pid_file(os.getpid(), SID)
    _started("afresh")
    [session] = take_snapshot(load_config(), StateStore.open_default()).sessions
    assert [s.id for s in session.subagents] == ["toolu_new"]
    assert session.hook_agents == []
    assert subagent_counts(session) == (1, 1)
