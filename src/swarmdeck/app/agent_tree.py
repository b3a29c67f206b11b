"""A Tree of sessions and their subagents, kept in step node by node so nothing jumps.

Nodes are keyed (session id, then subagent id) and ordered by when they started, so a refresh
changes labels in place and adds newcomers at the end; folded nodes stay folded and the cursor
stays on its line. A subagent is placed under its parent subagent when there is one.

A session's ended subagents (completed or failed) beyond the newest SHOWN_FINISHED go under
one folded "N finished · M failed" line (expandable), so a swarm that ran for hours does not push
the sessions waiting for the person below the fold; the failed are counted apart, in red.

Textual numbers every node a tree ever made and draws that number, with the line's, into the
line's style, and keeps every style it drew in caches of thousands. Whenever a node comes or
goes, the same lines are laid out again on nodes numbered from the start, the lines shown first:
each line is then always drawn with the same number, so a swarm's churn of subagents leaves the
app's memory flat (issue 36).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Sequence

from rich.style import Style
from rich.text import Text
from textual.geometry import Size
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from swarmdeck.durations import runtime_text
from swarmdeck.printable import printable_text
from swarmdeck.probes.claude.sessions import SessionInfo, ToolCall
from swarmdeck.probes.claude.subagents import SubagentInfo
from swarmdeck.views.sessions import figures_label, session_name
from swarmdeck.words import counted

STATUS_STYLES = {
    "running": "bold green",
    "completed": "dim",
    "failed": "bold red",
    "interrupted": "yellow",
}
STATUS_MARKS = {"running": "▶", "completed": "✓", "failed": "✗", "interrupted": "■"}
SHOWN_FINISHED = 3
"""A session's newest ended subagents shown on lines of their own; older ones fold."""
FOLDS = ("completed", "failed")
"""The statuses of a subagent that is over by itself, and folds once older than the newest few
(an interrupted one may be resumed: it keeps its line)."""
FOLD = "f"
"""The key kind of a session's "N finished" line (sessions are `s`, subagents `a`)."""
FOLDED = "+"
"""What a line with lines folded under it (a session's "N finished" line) shows first, in place
of Textual's `▶`, which here would read as a running subagent."""


def folded_ids(subagents: Sequence[SubagentInfo]) -> set[str]:
    """The ids of a session's ended subagents (of its main thread, completed or failed) beyond
    the newest SHOWN_FINISHED, by when they ended; none while only one is beyond them, whose
    own line takes no more space than the fold's."""
    by_id = {sub.id for sub in subagents}
    done = [sub for sub in subagents if sub.status in FOLDS and sub.parent_id not in by_id]
    done.sort(key=lambda sub: (sub.ended_at or sub.started_at or 0.0, sub.id))
    return {sub.id for sub in done[:-SHOWN_FINISHED]} if len(done) > SHOWN_FINISHED + 1 else set()


def fold_label(folded: Sequence[SubagentInfo], retired: tuple[int, int] = (0, 0)) -> Text:
    """The fold line: how many finished and, apart and in red, how many failed; `retired`,
    the session's finished and failed subagents the probe no longer lists (whose lines the
    fold would hold), are counted in."""
    failed = sum(sub.status == "failed" for sub in folded) + retired[1]
    finished = len(folded) + retired[0] + retired[1] - failed
    parts = []
    if finished:
        parts.append(Text(f"{STATUS_MARKS['completed']} {finished} finished",
                          style=STATUS_STYLES["completed"]))
    if failed:
        parts.append(Text(f"{STATUS_MARKS['failed']} {failed} failed",
                          style=STATUS_STYLES["failed"]))
    return Text(" · ", style="dim").join(parts)


def _tool_text(call: ToolCall | None, now: float, tool_call_max: float) -> Text:
    """The tool in flight and how long it runs; red past `tool_call_max` seconds (the
    watchdog's `watchdog.tool_call_max`, so the tree turns red when a finding is due)."""
    if call is None:
        return Text()
    summary = f" {call.summary[:40]}" if call.summary else ""
    since = now - call.started_at if call.started_at is not None else None
    age = runtime_text(since)
    style = "bold red" if since is not None and since > tool_call_max else "cyan"
    return Text.assemble(" · ", (f"{call.name}{summary}", "cyan"), (f" {age}", style))


def session_label(session: SessionInfo, now: float, *, tool_call_max: float) -> Text:
    """One line per session: live or not, name, state, tool in flight, swarm figures."""
    name = session_name(session)
    label = Text()
    if session.needs_person:
        label.append("⚑ ", style="bold black on yellow")
    label.append("● " if session.live else "○ ", style="bold green" if session.live else "dim")
    label.append(name[:50], style="bold" if session.live else "")
    if session.git_branch:
        label.append(f" [{session.git_branch}]", style="magenta")
    if session.needs_person:
        why = f": {session.waiting_for}" if session.waiting_for else ""
        label.append(f" waiting for you{why}", style="bold yellow")
    elif session.state:
        label.append(f" {session.state}")
    label.append_text(_tool_text(session.tool_in_flight, now, tool_call_max))
    health = session.health
    if health.dispatches or health.running:
        label.append(
            f" · {health.running} running / {health.dispatches} dispatched"
            f" · peak {health.peak_parallel} at once · eff {health.effective_parallelism:.1f}",
            style="dim" if not health.running else "",
        )
    used = figures_label(session.figures)
    if used:
        label.append(f" · {used}", style="dim")
    answer = session.figures.last_answer_at
    if session.live and answer is not None:
        label.append(f" · answered {runtime_text(now - answer)} ago", style="dim")
    if session.last_activity_at is not None and not session.live:
        label.append(f" · {runtime_text(now - session.last_activity_at)} ago", style="dim")
    return label


def subagent_label(
    sub: SubagentInfo, now: float, session_live: bool = True, *, tool_call_max: float
) -> Text:
    """One line per subagent: status, description, type, tool in flight, calls, tokens, time.

    A subagent its transcript calls running in a session that is not live is marked as
    unconfirmed: nothing says the process is gone, nothing says it still runs.
    """
    label = Text()
    style = STATUS_STYLES.get(sub.status, "")
    label.append(f"{STATUS_MARKS.get(sub.status, '?')} ", style=style)
    label.append((sub.description or sub.id)[:50], style=style if sub.status != "completed" else "")
    label.append(f" ({sub.type}{', bg' if sub.background else ''})", style="dim")
    label.append_text(_tool_text(sub.tool_in_flight, now, tool_call_max))
    if sub.tool_calls:
        label.append(f" · {counted(sub.tool_calls, 'call')}", style="dim")
    if sub.tokens:
        tokens = f"{sub.tokens / 1000:.0f}k" if sub.tokens >= 1000 else str(sub.tokens)
        label.append(f" · {tokens} tok", style="dim")
    if sub.status == "running" and not session_live:
        label.append(" · session not live", style="yellow")
    elif sub.status == "running" and sub.started_at is not None:
        label.append(f" · {runtime_text(now - sub.started_at)}", style="green")
    elif sub.ended_at is not None and sub.started_at is not None:
        label.append(f" · took {runtime_text(sub.ended_at - sub.started_at)}", style="dim")
    return label


def _depth(sub: SubagentInfo, by_id: dict[str, SubagentInfo]) -> int:
    depth, seen, parent = 0, {sub.id}, sub.parent_id
    while parent is not None and parent in by_id and parent not in seen:
        seen.add(parent)
        depth += 1
        parent = by_id[parent].parent_id
    return depth


def _in_order(
    nodes: Iterable[TreeNode[str]], *, folded_too: bool
) -> Iterator[TreeNode[str]]:
    """The nodes and, depth first, their children: of every node, or only of those unfolded
    (the lines the tree shows)."""
    for node in nodes:
        yield node
        if folded_too or node.is_expanded:
            yield from _in_order(node.children, folded_too=folded_too)


class SessionTree(Tree[str]):
    """Sessions → subagents (→ nested subagents); node data is the node's key."""

    ICON_NODE = f"{FOLDED} "
    DEFAULT_CSS = """
    SessionTree {
        overflow-x: hidden;
    }
    """
    """The tree never scrolls sideways: its labels are cut to its width (`render_label`)."""

    def __init__(self, *, tool_call_max: float, id: str | None = None) -> None:
        """Args:
        tool_call_max: Seconds after which a tool in flight shows red (watchdog.tool_call_max).
        id: The widget id.
        """
        super().__init__("sessions", id=id)
        self.tool_call_max = tool_call_max
        self.show_root = False
        self._by_key: dict[str, TreeNode[str]] = {}
        self._parent_keys: dict[str, str | None] = {}

    def render_label(self, node: TreeNode[str], base_style: Style, style: Style) -> Text:
        """The label cut to the width left after its guides, ending in `…` when cut: the tree
        never scrolls sideways, so a line is never cut at the panel's edge mid-word. Its
        texts come from transcripts: their control characters are shown as escapes."""
        label = printable_text(super().render_label(node, base_style, style))
        depth = 0
        parent = node.parent
        while parent is not None and parent is not self.root:
            depth += 1
            parent = parent.parent
        space = self.scrollable_content_region.width - depth * self.guide_depth
        if space > 0 and label.cell_len > space:
            label.truncate(space, overflow="ellipsis")
        return label

    def watch_show_vertical_scrollbar(self, _shown: bool) -> None:
        """The vertical scrollbar came or went: the width left for the labels changed without
        the tree's size changing (a resize lays every line out again already)."""
        self.call_after_refresh(self._fit_labels)

    def _fit_labels(self) -> None:
        """Cut every label again for the width left, and keep the lines within it: the tree
        never scrolls sideways."""
        width = self.scrollable_content_region.width
        if self.virtual_size.width > width:
            self.virtual_size = Size(width, self.virtual_size.height)
        for node in self._by_key.values():
            node.refresh()

    def sync(self, sessions: Sequence[SessionInfo], now: float | None = None) -> None:
        """Make the tree show exactly these sessions and subagents."""
        now = time.time() if now is None else now
        wanted: dict[str, tuple[str | None, Text]] = {}
        for session in sorted(sessions, key=lambda s: (s.started_at or 0.0, s.session_id)):
            session_key = f"s:{session.session_id}"
            wanted[session_key] = (
                None, session_label(session, now, tool_call_max=self.tool_call_max)
            )
            by_id = {sub.id: sub for sub in session.subagents}
            ordered = sorted(
                session.subagents,
                key=lambda sub: (_depth(sub, by_id), sub.started_at or 0.0, sub.id),
            )
            folded = folded_ids(session.subagents)
            fold_key = f"{FOLD}:{session.session_id}"
            retired = (session.retired_finished, session.retired_failed)
            if folded or any(retired):
                wanted[fold_key] = (
                    session_key,
                    fold_label([sub for sub in ordered if sub.id in folded], retired),
                )
            for sub in ordered:
                parent = sub.parent_id
                parent_key = (
                    f"a:{session.session_id}:{parent}" if parent in by_id
                    else fold_key if sub.id in folded else session_key
                )
                label = subagent_label(
                    sub, now, session.live, tool_call_max=self.tool_call_max
                )
                wanted[f"a:{session.session_id}:{sub.id}"] = (parent_key, label)
            for agent in session.hook_agents:
                hook_label = Text.assemble(
                    ("▶ ", "bold green"),
                    agent.agent_id,
                    (f" ({agent.agent_type or 'subagent'}, hook only)", "dim"),
                    (f" · {runtime_text(now - agent.started_at)}", "green"),
                )
                wanted[f"h:{session.session_id}:{agent.agent_id}"] = (session_key, hook_label)
        self._apply(wanted)

    def _apply(self, wanted: dict[str, tuple[str | None, Text]]) -> None:
        moved = False
        for key in list(self._by_key):
            if key not in wanted or wanted[key][0] != self._parent_keys.get(key):
                self._drop(key)
                moved = True
        for key, (parent_key, label) in wanted.items():
            node = self._by_key.get(key)
            if node is None:
                parent = self._by_key.get(parent_key, self.root) if parent_key else self.root
                # A session's "N finished" line is its first, wherever it appears from.
                first = 0 if key.startswith(f"{FOLD}:") and parent.children else None
                self._by_key[key] = parent.add(
                    label, data=key, expand=parent_key is None, before=first
                )
                self._parent_keys[key] = parent_key
                moved = True
            elif node.label != label:
                node.set_label(label)
        if moved:
            self._renumber()
        for node in self._by_key.values():
            leaf = not node.children
            if node.allow_expand == leaf:
                node.allow_expand = not leaf

    def _renumber(self) -> None:
        """The same lines on new nodes numbered from the start (`Tree.clear` restarts the
        numbers): first the lines shown, in order, then those folded away; each fold as it
        was and the cursor on the same line. The view keeps its scroll, the lines being the
        same."""
        shown = list(_in_order(self.root.children, folded_too=False))
        folded = [
            hidden for node in shown if not node.is_expanded
            for hidden in _in_order(node.children, folded_too=True)
        ]
        lines = [(node.data, node.label, node.is_expanded) for node in shown + folded]
        cursor_line = self.cursor_line
        self.root.remove_children()
        self.clear()
        self._by_key = {}
        for key, label, expanded in lines:
            assert key is not None, "every node of the tree is made with its key"
            parent_key = self._parent_keys.get(key)
            parent = self._by_key[parent_key] if parent_key else self.root
            self._by_key[key] = parent.add(label, data=key, expand=expanded)
        if cursor_line >= 0:
            self.unselect()
            self.cursor_line = cursor_line

    def _drop(self, key: str) -> None:
        node = self._by_key.pop(key, None)
        self._parent_keys.pop(key, None)
        if node is None:
            return
        for child in list(node.children):
            if child.data is not None:
                self._drop(child.data)
        node.remove()

    def session_of(self, node: TreeNode[str] | None) -> str | None:
        """The session id a node belongs to."""
        if node is None or node.data is None:
            return None
        return node.data.split(":", 2)[1]
