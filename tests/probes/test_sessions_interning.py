"""What a refresh of the sessions reads every time, it reads by string paths: pathlib interns
each part of a path it parses, and a name interned anew at every refresh (a pid file's, an
agent's meta.json) keeps replacing entries in the interpreter's table of interned strings,
which is reallocated whole (1.9 MB in the soak) each time its deleted entries use it up: the
control room's resident memory stepped up with each (issue 36)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from interned import interned_names
from swarmdeck.demo.lines import Transcript, dumps
from swarmdeck.demo.sessions import API_TASKS, DemoSession, append, background_agent
from swarmdeck.probes.claude.sessions import SessionsProbe

READ_EVERY_TIME = re.compile(r"^(\d+\.json|agent-.+\.meta\.json)$")
"""A pid file's name and an agent's meta file's name."""


def test_a_refresh_interns_no_pid_file_or_meta_file_name(tmp_path: Path) -> None:
    session = DemoSession(tmp_path / "claude", "swarm", tmp_path / "work")
    session.start_process()
    try:
        for _ in background_agent(session, API_TASKS[0], step=0.0):
            pass
        probe = SessionsProbe(session.claude_dir)
        probe.refresh()
        [agent] = (session.transcript_path.with_suffix("") / "subagents").glob("agent-*.jsonl")
        late = Transcript(session.session_id, session.main.cwd, session.main.branch, "x")
        interned: list[str] = []
        meta = agent.with_name(agent.name.replace(".jsonl", ".meta.json"))
        for round_ in range(3):
            append(agent, late.text("one more answer"))
            os.utime(meta, (1_000_000 + round_, 1_000_000 + round_))
            session.write_pid_file()
            changed = [str(agent), str(meta),
                       *map(str, (session.claude_dir / "sessions").iterdir())]
            with interned_names() as names:
                probe.refresh(changed)
            interned += names
    finally:
        session.stop_process()
    assert [name for name in interned if READ_EVERY_TIME.match(name)] == []



@pytest.mark.parametrize("meta_seen", ["with its transcript", "before its transcript"])
def test_a_new_subagent_takes_one_entry_of_the_interned_table(
    tmp_path: Path, meta_seen: str
) -> None:
    """Its meta file is written before its transcript, and its change may be read before the
    transcript exists or with it. A path made for the meta file and dropped (the agent not
    followed yet, or followed and forgotten at once for want of a transcript) leaves its name
    to be interned anew by the transcript's change; a meta file beside a transcript starts
    following the agent, so the path made for it is the one the transcript's changes find.
    (The test names the agent's files by strings: a Path of its own would hold the name.)"""
    session = DemoSession(tmp_path / "claude", "swarm", tmp_path / "work")
    session.start_process()
    try:
        session.write(session.main.prompt("Work through the swarm backlog."))
        probe = SessionsProbe(session.claude_dir)
        probe.refresh()
        main = str(session.transcript_path)
        folder = os.path.join(main.removesuffix(".jsonl"), "subagents")
        os.makedirs(folder)
        agent_id, dispatch = "a0123456789abcdef", "toolu_01" + "0" * 22
        agent = os.path.join(folder, f"agent-{agent_id}.jsonl")
        meta = os.path.join(folder, f"agent-{agent_id}.meta.json")
        task = API_TASKS[0]
        lines = Transcript(session.session_id, session.main.cwd, session.main.branch, agent_id)
        session.write(session.main.agent(dispatch, task.description, task.description,
                                         task.agent_type))
        session.write(session.main.async_launched(dispatch, agent_id, task.description))
        with open(meta, "w") as out:
            json.dump({"agentType": task.agent_type, "description": task.description,
                       "toolUseId": dispatch}, out)
        with interned_names(added_only=True) as added:
            if meta_seen == "before its transcript":
                probe.refresh([main, meta])
            with open(agent, "a") as out:
                out.write(dumps(lines.prompt(task.description)))
            probe.refresh([main, meta, agent])
            for answer in ("reading", "done."):
                with open(agent, "a") as out:
                    out.write(dumps(lines.text(answer)))
                probe.refresh([agent, main])
        [info] = probe.sessions()
    finally:
        session.stop_process()
    assert [sub.id for sub in info.subagents] == [agent_id]
    assert added.count(f"agent-{agent_id}.jsonl") == 1
