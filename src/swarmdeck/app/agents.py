"""The Agents panel: Claude Code sessions and their subagents as a tree, with a parallelism line.

The tree follows the sessions probe: a thread worker waits on `watch_sessions`, so a write to
a transcript shows within a moment instead of at the next snapshot; snapshots (which carry the
subagents known only from hook events) refresh it too. The sparkline shows how many subagents
the highlighted session (else the busiest live one) ran at once over the last hour.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

from textual import work
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.reactive import reactive
from textual.widgets import Label, Sparkline, Tree

from swarmdeck.app.agent_tree import SessionTree
from swarmdeck.probes.claude.sessions import SessionInfo, SessionsProbe
from swarmdeck.probes.claude.sessions_watch import watch_sessions
from swarmdeck.probes.claude.swarm_health import parallelism_series
from swarmdeck.snapshot import Snapshot

SPARK_WINDOW = 3600.0
SPARK_BUCKETS = 60


class AgentsPanel(Vertical):
    """Which sessions are live and what their subagents are doing."""

    DEFAULT_CSS = """
    AgentsPanel #agents-tree {
        height: 1fr;
    }
    AgentsPanel #agents-spark {
        height: 2;
    }
    AgentsPanel #agents-spark-label {
        color: $text-muted;
    }
    """

    snapshot: reactive[Snapshot | None] = reactive(None)
    """The latest snapshot of the whole room."""
    focus_session: reactive[str | None] = reactive(None)
    """The session the sparkline describes: the highlighted one."""

    def __init__(self, probe: SessionsProbe | None = None) -> None:
        """Args:
        probe: The sessions probe to watch (the one the app's snapshots use); None shows
            only what snapshots bring.
        """
        super().__init__(id="agents", classes="panel")
        self.border_title = "Agents"
        self.probe = probe
        self._stop = threading.Event()
        self._sessions: list[SessionInfo] = []

    def compose(self) -> ComposeResult:
        yield Label("no Claude Code sessions seen", classes="empty")
        yield SessionTree(id="agents-tree")
        yield Label("", id="agents-spark-label")
        yield Sparkline([], id="agents-spark", summary_function=max)

    def on_mount(self) -> None:
        self.show([])
        if self.probe is not None:
            self.watch_transcripts()

    def on_unmount(self) -> None:
        self._stop.set()

    @work(thread=True, exclusive=True, group="agents-watch", exit_on_error=False)
    def watch_transcripts(self) -> None:
        """Follow the transcripts in a thread; each batch of writes redraws the tree."""
        assert self.probe is not None
        for sessions in watch_sessions(self.probe, self._stop):
            if self._stop.is_set():
                return
            self.app.call_from_thread(self.show, sessions)

    def watch_snapshot(self, snapshot: Snapshot | None) -> None:
        if snapshot is None:
            return
        self.show(snapshot.sessions)

    def watch_focus_session(self, _session_id: str | None) -> None:
        self._draw_sparkline(time.time())

    def on_tree_node_highlighted(self, event: Tree.NodeHighlighted[str]) -> None:
        self.focus_session = self.query_one(SessionTree).session_of(event.node)

    def show(self, sessions: Sequence[SessionInfo]) -> None:
        """Redraw from these sessions (from the watcher or from a snapshot)."""
        now = time.time()
        self._sessions = list(sessions)
        self.query_one(".empty", Label).display = not sessions
        tree = self.query_one(SessionTree)
        tree.display = bool(sessions)
        tree.sync(sessions, now)
        live = sum(1 for s in sessions if s.live)
        running = sum(s.health.running for s in sessions)
        self.border_subtitle = f"{live} live, {running} subagents running" if sessions else ""
        self._draw_sparkline(now)

    def _draw_sparkline(self, now: float) -> None:
        session = self._chosen()
        label = self.query_one("#agents-spark-label", Label)
        spark = self.query_one(Sparkline)
        if session is None or not session.health.timeline:
            label.display = spark.display = False
            return
        label.display = spark.display = True
        series = parallelism_series(session.health.timeline, now - SPARK_WINDOW, now,
                                    SPARK_BUCKETS)
        spark.data = [float(n) for n in series]
        health = session.health
        name = session.title or session.session_id[:8]
        label.update(
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
