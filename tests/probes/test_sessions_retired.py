"""A session's oldest ended subagents are retired (KEEP_ENDED): counted, never followed again,
and not remembered by name, so a session that runs thousands of them for hours costs the
probe no more than one that ran a few (issue 36)."""

from __future__ import annotations

from pathlib import Path

from swarmdeck.demo.lines import Transcript
from swarmdeck.demo.sessions import API_TASKS, DemoSession, append, background_agent
from swarmdeck.probes.claude.sessions import KEEP_ENDED, RETIRE_BATCH, SessionsProbe

STARTED = 3 * (KEEP_ENDED + RETIRE_BATCH)


def run_subagents(session: DemoSession, count: int) -> list[str]:
    """Start and finish `count` background subagents; their agent ids, oldest first."""
    folder = session.transcript_path.with_suffix("") / "subagents"
    ids: list[str] = []
    for number in range(count):
        for _ in background_agent(session, API_TASKS[number % len(API_TASKS)], step=0.0):
            pass
        names = {path.stem.removeprefix("agent-") for path in folder.glob("agent-*.jsonl")}
        [new] = names - set(ids)
        ids.append(new)
    return ids


def strings_reachable(root: object) -> set[str]:
    seen: set[int] = set()
    found: set[str] = set()
    todo = [root]
    while todo:
        thing = todo.pop()
        if id(thing) in seen:
            continue
        seen.add(id(thing))
        if isinstance(thing, str):
            found.add(thing)
        elif isinstance(thing, dict):
            todo += [*thing.keys(), *thing.values()]
        elif isinstance(thing, (list, tuple, set, frozenset)):
            todo += list(thing)
        elif hasattr(thing, "__dict__"):
            todo.append(vars(thing))
    return found


def test_a_retired_subagents_file_that_changes_again_is_not_read(tmp_path: Path) -> None:
    session = DemoSession(tmp_path / "claude", "swarm", tmp_path / "work")
    probe = SessionsProbe(session.claude_dir)
    ids = run_subagents(session, STARTED)
    [before] = probe.refresh()
    assert before.retired_finished + before.retired_failed >= STARTED - KEEP_ENDED - RETIRE_BATCH
    listed = {sub.id for sub in before.subagents}
    agent = next(agent for agent in ids if agent not in listed)
    retired = session.agent_path(agent)
    late = Transcript(session.session_id, session.main.cwd, session.main.branch, agent)
    append(retired, late.text("one more answer after the end"))
    [told] = probe.refresh([retired])
    [scanned] = probe.refresh()
    assert told.figures == before.figures
    assert scanned.figures == before.figures


def test_the_probe_keeps_no_name_of_a_retired_subagent(tmp_path: Path) -> None:
    session = DemoSession(tmp_path / "claude", "swarm", tmp_path / "work")
    probe = SessionsProbe(session.claude_dir)
    ids = run_subagents(session, STARTED)
    [info] = probe.refresh()
    retired = info.retired_finished + info.retired_failed
    assert retired >= STARTED - KEEP_ENDED - RETIRE_BATCH
    listed = {sub.id for sub in info.subagents}
    gone = [agent for agent in ids if agent not in listed]
    assert len(gone) == retired, "every subagent not listed is one retired"
    held = strings_reachable(probe)
    named = [agent for agent in gone if any(agent in text for text in held)]
    assert named == [], f"{len(named)} of {retired} retired subagents still named"
