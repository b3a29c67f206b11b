"""The Agents panel under Pilot: a tree of real transcripts that follows their writes."""

from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path

import pytest
from fixed_room import fixed_app
from pilot_waits import probed, until
from test_fit import drawn_lines, screen_lines

from claude_lines import ClaudeTree, Lines, append
from swarmdeck.app.agent_tree import STATUS_MARKS, SessionTree, subagent_label
from swarmdeck.app.main import SwarmdeckApp
from swarmdeck.config import load_config
from swarmdeck.hooks.payload import HookInput
from swarmdeck.hooks.record import record_event
from swarmdeck.probes.claude.subagents import SubagentInfo
from swarmdeck.state import StateStore

SID = "abcd7777-0000-4000-8000-000000000015"


def _session(home: Path) -> Path:
    tree = ClaudeTree(home / "claude")
    main = Lines(SID, branch="feat/agents")
    main.prompt("fan out", 0)
    main.agent("toolu_a", "Survey the web module", "Survey.", 1, subagent_type="Explore")
    main.agent("toolu_b", "Review the diff", "Review.", 2, subagent_type="code-reviewer")
    main.async_launched("toolu_b", "ab", 3)
    main.agent("toolu_c", "Write the docs", "Docs.", 2)
    main.foreground_done("toolu_c", "ac", 40)
    path = tree.write_main(main)
    agent = Lines(SID, sidechain=True, agent_id="aa")
    agent.prompt("Survey.", 2)
    agent.tool_use("toolu_aa1", "Bash", {"command": "ls src/web"}, 3)
    agent.agent("toolu_nested", "Nested look", "Nested.", 4, subagent_type="Plan")
    tree.write_agent(agent, meta={"agentType": "Explore", "toolUseId": "toolu_a"})
    tree.write_pid_file(os.getpid(), SID)
    return path


def _labels(tree: SessionTree) -> list[tuple[int, str]]:
    lines = []

    def walk(node, depth: int) -> None:
        for child in node.children:
            lines.append((depth, str(child.label)))
            walk(child, depth + 1)

    walk(tree.root, 0)
    return lines


async def test_sessions_and_subagents_show_as_a_tree(isolated_home: Path) -> None:
    path = _session(isolated_home)
    app = SwarmdeckApp(load_config(), StateStore.open_default())
    async with app.run_test(size=(180, 50)) as pilot:
        tree = app.query_one(SessionTree)
        await until(pilot, lambda: len(_labels(tree)) >= 5, "the tree")
        labels = _labels(tree)
        session = labels[0]
        assert session[0] == 0
        assert "● " in session[1] and "[feat/agents]" in session[1]
        assert "3 running / 3 dispatched" in session[1]
        by_text = {text.split(" (")[0][2:]: (depth, text) for depth, text in labels[1:]}
        assert by_text["Survey the web module"][0] == 1
        assert "· Agent Nested look" in by_text["Survey the web module"][1]
        assert by_text["Nested look"][0] == 2
        assert by_text["Write the docs"][1].startswith("✓")
        assert "bg" in by_text["Review the diff"][1]
        assert app.query_one("#agents").border_subtitle == "1 live, 3 subagents running"

        done = Lines(SID)
        done.notification("ab", "toolu_b", "failed", 90)
        append(path, done.dumps())
        await until(
            pilot, lambda: any(t.startswith("✗ Review the diff") for _, t in _labels(tree)),
            "the failed subagent",
        )
        spark_label = str(app.query_one("#agents-spark-label").render())
        assert "peak 4" in spark_label
        await pilot.pause()
        [spark] = drawn_lines(screen_lines(app), app.query_one("#agents-spark"))
        # Two running all the last hour, of a peak of 4: half height, on the scale the hosts'
        # histories use (whose full height is ▇, never the bars' █ of memory in use).
        assert set(spark) == {"▄"}, spark


async def test_empty_room_says_so_and_names_the_folder_it_read(isolated_home: Path) -> None:
    app = SwarmdeckApp(load_config(), StateStore.open_default())
    async with app.run_test(size=(160, 50)) as pilot:
        await probed(pilot)
        empty = app.query_one("#agents .empty")
        assert empty.display
        assert str(isolated_home / "claude" / "projects") in str(empty.render())
        assert not app.query_one(SessionTree).display


async def test_a_hook_only_subagent_never_leaves_the_tree_while_transcripts_are_written(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The watcher (woken by each write) and the snapshots (which read hook events) both
    reach the panel; every tree the panel draws must hold the hook-only subagent."""
    path = _session(isolated_home)
    (isolated_home / "config.toml").write_text("[ui]\nrefresh_interval = 0.3\n")
    record_event(HookInput("SubagentStart", {"session_id": SID, "agent_id": "ahook",
                                             "agent_type": "Explore",
                                             "hook_event_name": "SubagentStart"}),
                 now=time.time())
    drawn: list[bool] = []
    sync = SessionTree.sync

    def recording(tree: SessionTree, sessions, now=None) -> None:
        sync(tree, sessions, now)
        drawn.append(any(key.startswith("h:") for key in tree._by_key))

    monkeypatch.setattr(SessionTree, "sync", recording)
    app = SwarmdeckApp(load_config(), StateStore.open_default())
    async with app.run_test(size=(160, 45)) as pilot:
        await until(pilot, lambda: drawn and drawn[-1], "the hook-only subagent")
        first = len(drawn) - 1
        probe = app.sessions_probe
        assert probe is not None
        for n in range(4):
            generation = probe.generation
            more = Lines(SID)
            more.prompt(f"and then {n}", 200 + n)
            append(path, more.dumps())
            await until(pilot, lambda g=generation: probe.generation > g, "the write read")
            await probed(pilot)
        assert all(drawn[first:]), drawn


def _many_finished(home: Path, finished: int, failed: int = 0) -> None:
    """A live session with `finished` completed subagents, then `failed` failed ones (an
    `is_error` result), then one still running."""
    tree = ClaudeTree(home / "claude")
    main = Lines(SID)
    main.prompt("fan out", 0)
    for n in range(finished):
        main.agent(f"toolu_{n}", f"Finished task {n}", "Go.", 1 + n)
        main.foreground_done(f"toolu_{n}", f"a{n}", 2 + n)
    for n in range(failed):
        main.agent(f"toolu_f{n}", f"Failed task {n}", "Go.", 50 + n)
        main.result(f"toolu_f{n}", "the agent hit an API error", 51 + n, is_error=True)
    main.agent("toolu_run", "Still running", "Go.", 100)
    tree.write_main(main)
    tree.write_pid_file(os.getpid(), SID)


async def _drawn_tree(pilot, app: SwarmdeckApp) -> tuple[SessionTree, list[str], list[str]]:
    """The Agents tree once its running subagent is drawn: every label it holds, and the
    labels of the lines it shows (a folded line hides the ones inside it)."""
    tree = app.query_one(SessionTree)
    await until(pilot, lambda: any("Still running" in t for _, t in _labels(tree)), "tree")
    shown = [text for _, text in _labels(tree)]
    return tree, shown, [str(line.node.label) for line in tree._tree_lines]


async def test_completed_subagents_beyond_the_newest_few_fold_into_one_line(
    isolated_home: Path,
) -> None:
    _many_finished(isolated_home, 8)
    app = SwarmdeckApp(load_config(), StateStore.open_default())
    async with app.run_test(size=(180, 50)) as pilot:
        tree, shown, visible = await _drawn_tree(pilot, app)
        finished = [t for t in visible if "Finished task" in t]
        assert [t.split(" (")[0] for t in finished] == [
            "✓ Finished task 5", "✓ Finished task 6", "✓ Finished task 7"]
        assert any("Still running" in t for t in visible)
        [fold] = [t for t in visible if "finished" in t and "task" not in t]
        assert fold.strip().endswith("5 finished"), fold
        assert visible.index(fold) == 1, "the session's first line"
        assert sum("Finished task" in t for t in shown) == 8, "folded, not dropped"
        [node] = [line.node for line in tree._tree_lines if str(line.node.label) == fold]
        node.expand()
        await pilot.pause()
        visible = [str(line.node.label) for line in tree._tree_lines]
        assert sum("Finished task" in t for t in visible) == 8


async def test_failed_subagents_beyond_the_newest_few_fold_by_the_same_rule(
    isolated_home: Path,
) -> None:
    """A failed subagent is over as a finished one is: beyond the newest few ended ones it
    folds, and the fold line counts the failed apart, so none is hidden unsaid."""
    _many_finished(isolated_home, 0, failed=8)
    app = SwarmdeckApp(load_config(), StateStore.open_default())
    async with app.run_test(size=(180, 50)) as pilot:
        _, shown, visible = await _drawn_tree(pilot, app)
    assert sum("Failed task" in t for t in shown) == 8, "folded, not dropped"
    failed = [t.split(" (")[0] for t in visible if "Failed task" in t]
    assert failed == ["✗ Failed task 5", "✗ Failed task 6", "✗ Failed task 7"], visible
    [fold] = [t for t in visible if "failed" in t and "task" not in t]
    assert fold.strip().endswith("5 failed"), fold
    assert visible.index(fold) == 1, "the session's first line"


async def test_the_fold_line_counts_finished_and_failed_apart(isolated_home: Path) -> None:
    _many_finished(isolated_home, 4, failed=4)
    app = SwarmdeckApp(load_config(), StateStore.open_default())
    async with app.run_test(size=(180, 50)) as pilot:
        tree = app.query_one(SessionTree)
        await until(pilot, lambda: any("Still running" in t for _, t in _labels(tree)), "tree")
        visible = [str(line.node.label) for line in tree._tree_lines]
    assert sum("task" in t for t in visible) == 3, visible
    [fold] = [t for t in visible if "finished" in t and "task" not in t]
    assert fold.strip().endswith("4 finished · ✗ 1 failed"), fold


async def test_the_fold_line_shows_no_glyph_of_a_subagent_state(isolated_home: Path) -> None:
    """`▶` says a subagent runs: the line the finished ones fold into must not read as one."""
    _many_finished(isolated_home, 8)
    app = SwarmdeckApp(load_config(), StateStore.open_default())
    async with app.run_test(size=(180, 50)) as pilot:
        tree = app.query_one(SessionTree)
        await until(pilot, lambda: any("Still running" in t for _, t in _labels(tree)), "tree")
        await pilot.pause()
        [fold] = [line for line in drawn_lines(screen_lines(app), tree) if "5 finished" in line]
    before = fold[:fold.index("5 finished")]
    glyphs = set(before) - set(" ─│├└")
    assert glyphs - {STATUS_MARKS["completed"]}, fold
    assert not glyphs & (set(STATUS_MARKS.values()) - {STATUS_MARKS["completed"]}), fold


async def test_one_finished_subagent_beyond_the_few_keeps_its_own_line(isolated_home: Path) -> None:
    """Folding it would give the line it takes to '✓ 1 finished'."""
    _many_finished(isolated_home, 4)
    app = SwarmdeckApp(load_config(), StateStore.open_default())
    async with app.run_test(size=(180, 50)) as pilot:
        tree = app.query_one(SessionTree)
        await until(pilot, lambda: any("Still running" in t for _, t in _labels(tree)), "tree")
        visible = [str(line.node.label) for line in tree._tree_lines]
    assert sum("Finished task" in t for t in visible) == 4, visible
    assert not any(t.strip().endswith(" finished") for t in visible), visible


@pytest.mark.parametrize(("calls", "said"), [(1, "1 call"), (2, "2 calls")])
def test_a_subagents_tool_calls_are_counted_as_a_person_writes_them(calls: int, said: str) -> None:
    sub = SubagentInfo(
        id="a1", tool_use_id=None, description="map the handlers", type="Explore",
        status="completed", background=False, started_at=0.0, ended_at=1.0,
        last_activity_at=1.0, tool_calls=calls, tokens=None, parent_id=None,
        tool_in_flight=None, transcript_path=None,
    )
    assert said in subagent_label(sub, 2.0, tool_call_max=480).plain.split(" · ")


def _many_running(session, count: int):
    """The fixed room's session with `count` running subagents of long descriptions: more
    lines than the Agents panel holds at 100x30, each longer than its width."""
    subagents = [
        dataclasses.replace(
            session.subagents[0], id=f"b{n}", tool_use_id=f"toolu_b{n}", status="running",
            ended_at=None, description=f"Look over part {n} of the long module list",
        )
        for n in range(count)
    ]
    return dataclasses.replace(session, subagents=subagents)


def _never_sideways(tree: SessionTree) -> None:
    width = tree.scrollable_content_region.width
    assert tree.styles.overflow_x == "hidden"  # not even a label that could not be cut
    assert not tree.show_horizontal_scrollbar
    assert tree.virtual_size.width <= width, (tree.virtual_size, width)
    assert tree.scroll_x == 0


async def test_the_agents_tree_never_scrolls_sideways_at_100x30(isolated_home: Path) -> None:
    """At 100x30 the panel is 36 cells wide: with more lines than it holds, the vertical
    scrollbar takes 2 of them, and the labels are cut again to what is left, so no horizontal
    scrollbar (whose thumb was drawn inside a tree line) ever appears; once the vertical one
    goes, the labels are cut again to the whole width."""
    app = fixed_app(isolated_home)
    async with app.run_test(size=(100, 30)) as pilot:
        await probed(pilot)
        tree = app.query_one(SessionTree)
        [session] = app.snapshot.sessions
        wide = tree.scrollable_content_region.width
        tree.sync([_many_running(session, 20)])
        await until(pilot, lambda: tree.show_vertical_scrollbar, "the vertical scrollbar")
        await pilot.pause()
        _never_sideways(tree)
        narrow = tree.scrollable_content_region.width
        assert narrow < wide
        lines = drawn_lines(screen_lines(app), tree)
        assert lines[0].endswith("…") and len(lines[0]) == narrow, lines[0]
        tree.root.children[0].collapse()
        await until(pilot, lambda: not tree.show_vertical_scrollbar, "no vertical scrollbar")
        await pilot.pause()
        _never_sideways(tree)
        [line] = [line for line in drawn_lines(screen_lines(app), tree) if line]
        assert line.endswith("…") and len(line) == wide, line


def _node(tree: SessionTree, key_end: str):
    found = []

    def walk(node) -> None:
        for child in node.children:
            if isinstance(child.data, str) and child.data.endswith(key_end):
                found.append(child)
            walk(child)

    walk(tree.root)
    return found[0] if found else None


async def test_h_on_a_subagent_shows_its_handover_and_the_palette_offers_it(
    isolated_home: Path,
) -> None:
    from swarmdeck.app.handover import HandoverScreen

    _session(isolated_home)
    app = SwarmdeckApp(load_config(), StateStore.open_default())
    async with app.run_test(size=(160, 45)) as pilot:
        tree = app.query_one(SessionTree)
        await until(pilot, lambda: _node(tree, ":aa") is not None, "the subagent aa")
        offered = [command.title for command in app.get_system_commands(app.screen)]
        assert "Handover of the subagent (h)" in offered
        tree.focus()
        tree.move_cursor(tree.root.children[0])
        await pilot.press("h")
        await pilot.pause()
        assert not isinstance(app.screen, HandoverScreen)
        tree.move_cursor(_node(tree, ":aa"))
        await pilot.press("h")
        await until(pilot, lambda: isinstance(app.screen, HandoverScreen), "the handover")
        text = str(app.screen.query_one("#handover-text").render())
        assert "Survey." in text and "$ ls src/web  -> exit no result" in text
        assert "It was in the middle of: Agent Nested look" in text
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, HandoverScreen), "back")
