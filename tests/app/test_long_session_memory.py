"""A session that keeps starting subagents for hours costs the control room what its newest
KEEP_ENDED ended ones do: older ones are counted on the Agents panel's fold line, not kept
(issue 36: its memory grew with every subagent a session ever ran). Counted in entries (the
subagents the app holds, the lines of its tree), never in bytes or time."""

from __future__ import annotations

import gc
from pathlib import Path

from pilot_waits import probed, until
from textual.widgets import Tree

from swarmdeck.app.agent_tree import SHOWN_FINISHED, SessionTree, folded_ids
from swarmdeck.app.main import SwarmdeckApp
from swarmdeck.config import load_config
from swarmdeck.demo.sessions import API_TASKS, DemoSession, background_agent
from swarmdeck.probes.claude.sessions import KEEP_ENDED, RETIRE_BATCH
from swarmdeck.probes.claude.subagents import SubagentInfo
from swarmdeck.state import StateStore

ROUNDS = 8
PER_ROUND = 10
"""Subagents each round starts and finishes: 80 in all, well past KEEP_ENDED + RETIRE_BATCH."""
PASSES = 30
"""Watchdog passes over a session that changed since the one before."""


def finish_one(session: DemoSession, number: int) -> None:
    """One background subagent of the session, dispatched, run and finished, all at once."""
    for _ in background_agent(session, API_TASKS[number % len(API_TASKS)], step=0.0):
        pass


def tree_lines(tree: Tree) -> int:
    count, todo = 0, list(tree.root.children)
    while todo:
        node = todo.pop()
        count += 1
        todo += node.children
    return count


async def test_a_session_running_subagents_for_hours_keeps_the_app_bounded(
    isolated_home: Path,
) -> None:
    session = DemoSession(isolated_home / "claude", "swarm", isolated_home / "work")
    session.start_process()
    app = SwarmdeckApp(load_config(), StateStore.open_default())
    try:
        async with app.run_test(size=(120, 35)) as pilot:
            started = 0
            most_listed = most_lines = 0
            for _ in range(ROUNDS):
                for _ in range(PER_ROUND):
                    finish_one(session, started)
                    started += 1

                def caught_up(started: int = started) -> bool:
                    shown = app.sessions or []
                    return any(
                        len(s.subagents) + s.retired_finished + s.retired_failed == started
                        and not s.running_subagents() for s in shown
                    )

                await until(pilot, caught_up, f"{started} subagents counted")
                await probed(pilot)
                [shown] = app.sessions or []
                most_listed = max(most_listed, len(shown.subagents))
                most_lines = max(most_lines, tree_lines(app.query_one(SessionTree)))
            fold = str(app.query_one(SessionTree).root.children[0].children[0].label)
    finally:
        session.stop_process()
        app.store.close()
    bound = KEEP_ENDED + RETIRE_BATCH
    assert most_listed <= bound, f"{most_listed} subagents held for {started} run"
    assert most_lines <= bound + 2, f"{most_lines} tree lines for {started} subagents"
    assert shown.retired_finished + shown.retired_failed + len(shown.subagents) == started
    # The fold holds all but the newest three (those that end in one instant are newest by
    # id), the retired counted in: none is lost.
    lines = [sub for sub in shown.subagents if sub.id not in folded_ids(shown.subagents)]
    assert len(lines) == SHOWN_FINISHED
    failed = sum(n % len(API_TASKS) == 2 for n in range(started))  # the third task fails
    failed -= sum(sub.status == "failed" for sub in lines)
    folded = started - len(lines)
    assert fold == f"✓ {folded - failed} finished · ✗ {failed} failed", fold


async def test_the_watchdogs_passes_keep_no_snapshot_of_the_sessions(
    isolated_home: Path,
) -> None:
    """The app's watchdog compares each pass with the last `watchdog.history` (60) ones: it
    kept each pass's whole snapshot, every session's subagents in it, for the half hour the
    ring takes to fill. Now the subagents the app holds stay what the latest sessions list,
    whatever the number of passes."""
    (isolated_home / "config.toml").write_text("[watchdog]\ninterval = 0.01\n")
    gc.collect()
    before = sum(isinstance(thing, SubagentInfo) for thing in gc.get_objects())
    session = DemoSession(isolated_home / "claude", "swarm", isolated_home / "work")
    session.start_process()
    app = SwarmdeckApp(load_config(), StateStore.open_default())
    try:
        async with app.run_test(size=(120, 35)) as pilot:
            for number in range(PASSES):
                finish_one(session, number)  # each pass sees the session changed
                await until(pilot, lambda n=number: any(
                    len(s.subagents) + s.retired_finished + s.retired_failed == n + 1
                    for s in app.sessions or []
                ), f"{number + 1} subagents")
                await probed(pilot)
            gc.collect()
            held = sum(isinstance(thing, SubagentInfo) for thing in gc.get_objects()) - before
    finally:
        session.stop_process()
        app.store.close()
    # The latest list in the probe, the app and its panels, and one being assembled: a few
    # copies of the subagents a session keeps, not one for every pass.
    assert held <= 4 * (KEEP_ENDED + RETIRE_BATCH), f"{held} subagents held after {PASSES} passes"
