"""The control room app: lays out the panels and feeds them snapshots probed off the UI loop.

Panels receive the app's `snapshot` (and the Agents panel its `sessions`) by data binding in
`compose`; they never reach for the app or a probe. New panels are added in `compose` with
`.data_bind(SwarmdeckApp.snapshot)`; modal screens are pushed from an `action_…` method named
in `BINDINGS`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import partial
from pathlib import Path

from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import DataTable, Footer, Header
from textual.worker import Worker, WorkerState

from swarmdeck.app.agents import AgentsPanel
from swarmdeck.app.alerts import AlertsPanel
from swarmdeck.app.gpus import GpusPanel
from swarmdeck.app.help import HelpScreen
from swarmdeck.app.hosts import HostsPanel
from swarmdeck.app.jobs import JobsPanel
from swarmdeck.app.locks import LocksPanel
from swarmdeck.app.migrate import MigrateScreen
from swarmdeck.app.terminal import controlling_tty, hung_up
from swarmdeck.app.watchdog import WatchdogPanel
from swarmdeck.config import Config
from swarmdeck.paths import claude_dir
from swarmdeck.probes.claude.sessions import SessionInfo, SessionsProbe
from swarmdeck.probes.claude.sessions_watch import watch_sessions
from swarmdeck.probes.host import CpuSampler
from swarmdeck.probes.ledger import LedgerJob
from swarmdeck.probes.peer import PeerProber
from swarmdeck.probes.usage import UsageTracker
from swarmdeck.snapshot import Snapshot, reconciled_snapshot
from swarmdeck.state import StateStore
from swarmdeck.watchdog.loop import Watchdog

STYLES = Path(__file__).resolve().parent.parent / "styles"

Prober = Callable[[], Snapshot]


class SwarmdeckApp(App[int]):
    """One screen of panels; every panel watches the app's latest snapshot."""

    CSS_PATH = str(STYLES / "app.tcss")
    TITLE = "swarmdeck"
    BINDINGS = [
        Binding("question_mark", "help", "Help", key_display="?"),
        Binding("m", "migrate", "Migrate"),
        Binding("q", "quit", "Quit"),
    ]

    snapshot: reactive[Snapshot | None] = reactive(None)
    """The latest snapshot; every panel is bound to it."""
    sessions: reactive[list[SessionInfo] | None] = reactive(None)
    """The Claude Code sessions the Agents panel shows: the newest the sessions probe has
    (woken by transcript writes between snapshots), or the snapshot's with a given prober."""

    class SnapshotReady(Message):
        """A probe worker finished a snapshot."""

        def __init__(self, snapshot: Snapshot) -> None:
            super().__init__()
            self.snapshot = snapshot

    def __init__(
        self,
        config: Config,
        store: StateStore,
        *,
        prober: Prober | None = None,
        readonly: bool = False,
        terminal: int | None = None,
        watchdog: Watchdog | None = None,
    ) -> None:
        """Args:
            config: The effective configuration.
            store: The state store the panels read.
            prober: What takes a snapshot; defaults to probing this host and the store (and
                then a sessions probe follows the transcripts between snapshots).
            readonly: Hide every action that changes anything.
            terminal: The terminal's descriptor; the app quits when it hangs up.
            watchdog: The engine run after each snapshot; by default one of its own when the
                app probes this host (a given prober gets none unless one is passed).
        """
        super().__init__()
        self.config = config
        self.store = store
        self.readonly = readonly
        self.terminal = terminal
        self.sessions_probe = SessionsProbe() if prober is None else None
        """Kept across snapshots and woken by transcript writes: transcripts are read once."""
        self._sessions_generation = -1
        self.snapshots_taken = 0
        """How many snapshots have reached the panels (what tests wait on)."""
        self._stop_watching = threading.Event()
        self.peer_prober = PeerProber(wait=False) if prober is None and config.hosts else None
        """One SSH connection per peer, read in the background: a slow peer never holds up
        this host's figures, and shows as "not read" until it answers or times out."""
        self.prober: Prober = prober or partial(
            reconciled_snapshot,
            config,
            store,
            CpuSampler(),
            self.sessions_probe,
            UsageTracker(),
            self.peer_prober,
        )
        self.watchdog = watchdog or (Watchdog(config, store) if prober is None else None)
        if readonly:
            self.sub_title = "read-only"

    def compose(self) -> ComposeResult:
        interval = max(0.25, self.config.ui.refresh_interval)
        points = max(10, int(self.config.ui.history_minutes * 60 / interval))
        bound = SwarmdeckApp.snapshot
        folder = self.sessions_probe.claude_dir if self.sessions_probe else claude_dir()
        yield Header()
        yield HostsPanel(points, self.config.ui.history_minutes).data_bind(bound)
        with Horizontal(id="middle"):
            yield JobsPanel().data_bind(bound)
            yield AgentsPanel(folder).data_bind(SwarmdeckApp.sessions)
        with Horizontal(id="lower"):
            yield GpusPanel().data_bind(bound)
            yield LocksPanel().data_bind(bound)
        yield WatchdogPanel(self.store, readonly=self.readonly).data_bind(bound)
        yield AlertsPanel().data_bind(bound)
        yield Footer()

    def on_mount(self) -> None:
        self.probe()
        if self.sessions_probe is not None:
            self.watch_transcripts()

    @work(thread=True, exclusive=True, group="sessions-watch", exit_on_error=False)
    def watch_transcripts(self) -> None:
        """Follow the transcripts in a thread; each batch of writes reaches the Agents panel
        through `sessions`, as the snapshots do."""
        probe = self.sessions_probe
        assert probe is not None
        for _ in watch_sessions(probe, self._stop_watching):
            if self._stop_watching.is_set():
                return
            self.call_from_thread(self._take_sessions, *probe.reading())

    def _take_sessions(self, generation: int, sessions: list[SessionInfo]) -> None:
        """Show the probe's sessions unless newer ones are shown already."""
        if generation >= self._sessions_generation:
            self._sessions_generation = generation
            self.sessions = sessions

    @work(thread=True, exclusive=True, group="probe", exit_on_error=False)
    def probe(self) -> None:
        """Take a snapshot in a thread: probes read kernel files and SQLite, never on the UI
        loop; the watchdog's pass runs here too."""
        snapshot = self.prober()
        if self.watchdog is not None:
            snapshot = self.watchdog.observe(snapshot)
        self.post_message(self.SnapshotReady(snapshot))

    def on_unmount(self) -> None:
        self._stop_watching.set()
        if self.peer_prober is not None:
            self.peer_prober.close()
        if self.watchdog is not None:
            self.watchdog.close()

    def on_swarmdeck_app_snapshot_ready(self, message: SnapshotReady) -> None:
        self.snapshot = message.snapshot
        self.snapshots_taken += 1
        if self.sessions_probe is not None:
            self._take_sessions(*self.sessions_probe.reading())
        else:
            self.sessions = message.snapshot.sessions

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """Re-arm the next probe only when this one is over, so probes never overlap."""
        if event.worker.group != "probe":
            return
        if event.state is WorkerState.ERROR:
            self.notify(f"probe failed: {event.worker.error}", severity="error", timeout=8)
        if event.state in (WorkerState.SUCCESS, WorkerState.ERROR):
            if self.terminal is not None and hung_up(self.terminal):
                self.exit(0)
                return
            self.set_timer(self.config.ui.refresh_interval, self.probe)

    def action_help(self) -> None:
        keys = [
            (binding.key_display or binding.key, binding.description)
            for binding in self.BINDINGS
            if isinstance(binding, Binding)
        ]
        keys.append(("ctrl+p", "Command palette"))
        self.push_screen(HelpScreen(keys))


    def action_migrate(self) -> None:
        """The migrate pane for the job under the Jobs panel's cursor."""
        if self.readonly:
            self.notify("read-only: migrating a job is off", severity="warning")
            return
        job = self._selected_job()
        if job is None:
            self.notify("select a job row in the Jobs panel first", severity="warning")
            return
        if not any(host.enabled and host.name != job.host for host in self.config.hosts):
            self.notify("no enabled peer: add a [[hosts]] entry to the config", severity="warning")
            return
        self.push_screen(MigrateScreen(self.config, job), self._migrated)

    def _selected_job(self) -> LedgerJob | None:
        table = self.query_one("#jobs-table", DataTable)
        if self.snapshot is None or table.row_count == 0:
            return None
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        return next((job for job in self.snapshot.jobs if str(job.id) == key), None)

    def _migrated(self, line: str | None) -> None:
        if line:
            self.notify(line, timeout=8)


def run_app(config: Config, store: StateStore, *, readonly: bool = False) -> int:
    """Run the control room until the person quits; returns the exit status."""
    app = SwarmdeckApp(config, store, readonly=readonly, terminal=controlling_tty())
    result = app.run()
    return result or 0
