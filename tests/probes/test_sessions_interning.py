"""What a refresh of the sessions reads every time, it reads by string paths: pathlib interns
each part of a path it parses, and a name interned anew at every refresh (a pid file's, an
agent's meta.json) keeps replacing entries in the interpreter's table of interned strings,
which is reallocated whole (1.9 MB in the soak) each time its deleted entries use it up: the
control room's resident memory stepped up with each (issue 36)."""

from __future__ import annotations

import os
import re
from pathlib import Path

from interned import interned_names
from swarmdeck.demo.lines import Transcript
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
