"""The Agents panel: Claude Code sessions and their subagents as a tree, with a parallelism line.

The panel has one feed: the app's `sessions`, bound to it. The app fills that from its sessions
probe, whose watcher wakes on every transcript write and whose snapshots bring the subagents
known only from hook events, both read under the probe's lock and never older than what is
shown. A line above the tree names the sessions waiting for the person, the longest waiting
first. The sparkline shows how many subagents the highlighted session (else the busiest live
one) ran at once over the last hour, on the scale 0..its peak (app/bar.py's sparkline, as the
hosts' histories are drawn).
"""

from __future__ import annotations

import time
from pathlib import Path

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.reactive import var
from textual.widgets import Label, Tree

from swarmdeck.app.agent_tree import SessionTree
from swarmdeck.app.bar import ScaledSparkline
from swarmdeck.app.quiet import show_subtitle, show_text
from swarmdeck.printable import printable
from swarmdeck.probes.claude.sessions import SessionInfo, waiting_for_person
from swarmdeck.probes.claude.swarm_health import parallelism_series
from swarmdeck.tmux_pane import go_to_pane
from swarmdeck.views.sessions import home_relative, waiting_text

SPARK_WINDOW = 3600.0
SPARK_BUCKETS = 60


class AgentsPanel(Vertical, can_focus=True):
    """Which sessions are live and what their subagents are doing."""

    TITLE = "Agents"
    BINDINGS = [
        Binding("h", "handover", "Handover of the subagent"),
        Binding("g", "go_to_pane", "Go to its tmux pane"),
    ]

    DEFAULT_CSS = """
    AgentsPanel #agents-tree {
        height: 1fr;
    }
    AgentsPanel #agents-spark {
        height: 1;
    }
    AgentsPanel #agents-spark-label {
        color: $text-muted;
    }
    AgentsPanel #agents-waiting {
        color: $warning;
        text-style: bold;
    }
    """

    sessions: var[list[SessionInfo] | None] = var(None)
    """The sessions to show, bound to the app's."""
    focus_session: var[str | None] = var(None)
    """The session the sparkline describes: the highlighted one."""

    def __init__(self, claude_dir: Path) -> None:
        """Args:
        claude_dir: The Claude Code folder the sessions are read from, named when empty.
        """
        super().__init__(id="agents", classes="panel")
        self.border_title = self.TITLE
        self._claude_dir = claude_dir
        self._sessions: list[SessionInfo] = []

    def compose(self) -> ComposeResult:
        folder = home_relative(str(self._claude_dir / "projects"))
        yield Label(f"no Claude Code sessions seen in {folder}", classes="empty")
        yield Label("", id="agents-waiting")
        yield SessionTree(id="agents-tree", tool_call_max=self.app.config.watchdog.tool_call_max)
        yield Label("", id="agents-spark-label")
        yield ScaledSparkline(id="agents-spark")

    def on_mount(self) -> None:
        self.show([])

    def action_handover(self) -> None:
        """What a new subagent needs to continue the highlighted one (`swarmdeck handover`)."""
        from swarmdeck.app.handover import HandoverScreen

        node = self.query_one(SessionTree).cursor_node
        key = node.data if node is not None else None
        if not isinstance(key, str) or not key.startswith("a:"):
            self.notify("select a subagent in the Agents panel first", severity="warning")
            return
        self.app.push_screen(HandoverScreen(self._claude_dir, key.split(":", 2)[2]))

    def watch_sessions(self, sessions: list[SessionInfo] | None) -> None:
        if sessions is not None and self.is_attached:  # not attached: the app is ending
            self.show(sessions)

    def watch_focus_session(self, _session_id: str | None) -> None:
        self._draw_sparkline(time.time())

    def on_tree_node_highlighted(self, event: Tree.NodeHighlighted[str]) -> None:
        self.focus_session = self.query_one(SessionTree).session_of(event.node)

    def action_go_to_pane(self) -> None:
        """Switch the tmux client to the highlighted session's (or subagent's) pane."""
        tree = self.query_one(SessionTree)
        session_id = tree.session_of(tree.cursor_node)
        session = next((s for s in self._sessions if s.session_id == session_id), None)
        if session is None:
            self.notify("select a session or subagent first", severity="warning")
            return
        result = go_to_pane(session.tmux)
        self.notify(result.message, severity="information" if result.switched else "warning")

    def show(self, sessions: list[SessionInfo]) -> None:
        """Redraw from these sessions; only what changed is touched."""
        now = time.time()
        self._sessions = list(sessions)
        self.set_class(not sessions, "-empty")
        self.query_one(".empty", Label).display = not sessions
        tree = self.query_one(SessionTree)
        tree.display = bool(sessions)
        tree.sync(sessions, now)
        live = sum(1 for s in sessions if s.live)
        running = sum(s.health.running for s in sessions)
        subagents = "subagent" if running == 1 else "subagents"
        show_subtitle(self, f"{live} live, {running} {subagents} running" if sessions else "")
        self._draw_waiting(sessions, now)
        self._draw_sparkline(now)

    def _draw_waiting(self, sessions: list[SessionInfo], now: float) -> None:
        """The line above the tree naming the sessions waiting for the person, the longest
        waiting first; hidden when none waits."""
        waiting = waiting_for_person(sessions)
        line = self.query_one("#agents-waiting", Label)
        line.display = bool(waiting)
        if waiting:
            count = f"{len(waiting)} waiting for you, longest first" if len(waiting) > 1 else (
                "waiting for you"
            )
            show_text(line, f"⚑ {count}: {waiting_text(waiting, now)}")

    def _draw_sparkline(self, now: float) -> None:
        session = self._chosen()
        label = self.query_one("#agents-spark-label", Label)
        spark = self.query_one("#agents-spark", ScaledSparkline)
        if session is None or not session.health.timeline:
            label.display = spark.display = False
            return
        label.display = spark.display = True
        series = parallelism_series(session.health.timeline, now - SPARK_WINDOW, now,
                                    SPARK_BUCKETS)
        health = session.health
        spark.top = float(max(health.peak_parallel, *series, 1))
        spark.data = tuple(float(n) for n in series)
        name = printable(session.title or session.session_id[:8])
        show_text(
            label,
            f"subagents at once, last hour — {name[:30]}: peak {health.peak_parallel}, "
            f"effective {health.effective_parallelism:.1f}, "
            f"{health.context_bytes_total / 1024:.0f} KiB into the main context"
        )

    def _chosen(self) -> SessionInfo | None:
        by_id = {s.session_id: s for s in self._sessions}
        if self.focus_session in by_id:
            return by_id[self.focus_session]
        live = [s for s in self._sessions if s.live and s.health.timeline]
        pool = live or [s for s in self._sessions if s.health.timeline]
        return max(pool, key=lambda s: (s.health.running, s.last_activity_at or 0.0), default=None)
