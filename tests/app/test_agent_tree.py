"""The Agents tree over hours of a swarm: subagents come and go by the thousand, and the tree
draws them with a bounded set of styles, its folds, cursor and scroll kept where the person
left them."""

from __future__ import annotations

from textual.app import App, ComposeResult

from swarmdeck.app.agent_tree import SessionTree
from swarmdeck.probes.claude.sessions import SessionInfo
from swarmdeck.probes.claude.subagents import SubagentInfo
from swarmdeck.probes.claude.swarm_health import swarm_health

NOW = 1_800_000_000.0
SESSIONS = ("s1", "s2", "s3")
RUNNING = 4
"""Subagents each session runs at once, all new each generation but one that stays."""


class OneTree(App[None]):
    def __init__(self) -> None:
        super().__init__()
        self.highlighted: list[str | None] = []

    def compose(self) -> ComposeResult:
        yield SessionTree(tool_call_max=480)

    def on_tree_node_highlighted(self, event: SessionTree.NodeHighlighted[str]) -> None:
        self.highlighted.append(event.node.data)


def subagent(name: str, began: float) -> SubagentInfo:
    return SubagentInfo(
        id=name, tool_use_id=f"toolu_{name}", description=f"task {name}", type="Explore",
        status="running", background=True, started_at=began, ended_at=None,
        last_activity_at=began, tool_calls=3, tokens=1200, parent_id=None,
        tool_in_flight=None, transcript_path=None,
    )


def generation(number: int) -> list[SessionInfo]:
    """Three live sessions, each running one long subagent (`keeper`) and RUNNING that came
    with this generation (those of the one before are gone)."""
    now = NOW + number
    sessions = []
    for session_id in SESSIONS:
        subagents = [subagent("keeper", NOW - 60)] + [
            subagent(f"g{number}-{n}", now - n) for n in range(RUNNING)
        ]
        sessions.append(SessionInfo(
            session_id=session_id, cwd="/work/proj", git_branch=None, title=session_id,
            live=True, pid=None, process_started_at=None, state="busy",
            transcript_path="/dev/null", version="2.1.328", started_at=NOW - 600,
            last_activity_at=now, tool_in_flight=None, subagents=subagents,
            health=swarm_health(subagents, 0, now),
        ))
    return sessions


def marks_drawn(tree: SessionTree) -> set[tuple[object, object]]:
    """The (line, node) numbers the tree drew into its lines' styles (Textual keeps every
    style it drew, marks and all, in caches of thousands)."""
    return {
        (segment.style.meta["line"], segment.style.meta["node"])
        for y in range(tree.size.height)
        for segment in tree.render_line(y)
        if segment.style is not None and "node" in segment.style.meta
    }


async def test_subagents_that_come_and_go_are_drawn_with_a_bounded_set_of_styles() -> None:
    """A swarm starts thousands of subagents in a day; Textual numbers each node it ever made
    and draws that number into the line's style, so a tree that only adds nodes fills the style
    caches for as long as the app runs (issue 36: the app grew 22 % over two hours). One
    session is folded: its subagents come and go unseen."""
    app = OneTree()
    async with app.run_test(size=(100, 40)) as pilot:
        tree = app.query_one(SessionTree)
        tree.sync(generation(0), now=NOW)
        tree.root.children[1].collapse()
        drawn: set[tuple[object, object]] = set()
        for number in range(1, 300):
            tree.sync(generation(number), now=NOW + number)
            await pilot.pause()
            drawn |= marks_drawn(tree)
        lines = len(SESSIONS) * (2 + RUNNING) - (1 + RUNNING)
        assert len(drawn) == lines, "each line drawn with one node number, whoever it shows"


async def test_folds_cursor_and_scroll_stay_where_the_person_left_them() -> None:
    """However often the tree lays its lines out on new nodes, what the person set stays:
    a folded session stays folded, the cursor stays on its subagent, the view stays scrolled."""
    app = OneTree()
    async with app.run_test(size=(100, 10)) as pilot:
        tree = app.query_one(SessionTree)
        tree.sync(generation(0), now=NOW)
        await pilot.pause()
        tree.focus()
        [second] = [node for node in tree.root.children if node.data == "s:s2"]
        second.collapse()
        await pilot.pause()
        [keeper] = [node for node in tree.root.children[2].children
                    if node.data == "a:s3:keeper"]
        tree.move_cursor(keeper)
        tree.scroll_to(y=3, animate=False)
        await pilot.pause()
        line, scrolled = tree.cursor_line, tree.scroll_y
        app.highlighted.clear()

        for number in range(1, 200):
            tree.sync(generation(number), now=NOW + number)
            await pilot.pause()
            assert tree.cursor_node is not None and tree.cursor_node.data == "a:s3:keeper"
            assert tree.get_node_by_id(tree.cursor_node.id) is tree.cursor_node
            assert tree.cursor_line == line
            assert [node.is_expanded for node in tree.root.children] == [True, False, True]
            assert tree.scroll_y == scrolled
        assert set(app.highlighted) <= {"a:s3:keeper"}
