"""The control room app: lays out the panels and feeds them the snapshots its probe thread
(app/probe_loop.py) takes off the UI loop; collapses the panels to a short screen's height.

Panels receive the app's `snapshot` (and the Agents panel its `sessions`) by data binding in
`compose`; they never reach for the app or a probe. Where to add more:
- a panel: `compose`, with `.data_bind(SwarmdeckApp.snapshot)` (it subclasses SnapshotPanel,
  DrawnPanel or TablePanel from app/panel.py) and its id in PANELS for the number keys;
- an action that changes something: an `Action` in app/commands.py ACTIONS (key, palette and
  the read-only gate, app/readonly.py, come from there), an `action_…` method on the panel
  that owns its rows (JobsPanel.action_rerun), asking in a modal screen before it acts, and
  its name in ROW_ACTIONS here.
"""

from __future__ import annotations

import shlex
import threading
import time
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path

from textual import events, work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.containers import Horizontal
from textual.notifications import SeverityLevel
from textual.reactive import var
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Header, Tree

from swarmdeck.actions.detach import launch_detached_said
from swarmdeck.actions.run_request import RunRequest
from swarmdeck.app import commands
from swarmdeck.app.agent_tree import FOLD
from swarmdeck.app.agents import AgentsPanel
from swarmdeck.app.alerts import AlertsPanel
from swarmdeck.app.collapse import (
    EMPTY_HEIGHT,
    SHORT_HEIGHT,
    collapsed_panels,
    focused_height,
    glance_lines,
    glanced_panels,
    opened_rows,
)
from swarmdeck.app.detail import AgentDetail, DetailScreen, JobDetail
from swarmdeck.app.driver import QuietInputDriver
from swarmdeck.app.footer import FittedFooter
from swarmdeck.app.gpus import GpusPanel
from swarmdeck.app.help import HelpScreen, key_list
from swarmdeck.app.history import RoomHistory
from swarmdeck.app.host_detail import HostDetail
from swarmdeck.app.hosts import HostsPanel
from swarmdeck.app.jobs import JobsPanel
from swarmdeck.app.keyed_table import KeyedTable
from swarmdeck.app.launch import LaunchScreen
from swarmdeck.app.locks import LocksPanel
from swarmdeck.app.palette import key_commands
from swarmdeck.app.panel import SnapshotPanel, StorePanel
from swarmdeck.app.probe_loop import ProbeLoop
from swarmdeck.app.readonly import WriteGate
from swarmdeck.app.record_detail import AlertDetail, FindingDetail
from swarmdeck.app.terminal import controlling_tty, hung_up
from swarmdeck.app.watchdog import WatchdogPanel
from swarmdeck.config import Config
from swarmdeck.exitcodes import ExitCode
from swarmdeck.paths import claude_dir
from swarmdeck.printable import printable
from swarmdeck.probes.claude import sessions_watch
from swarmdeck.probes.claude.sessions import SessionInfo, SessionsProbe, waiting_for_person
from swarmdeck.probes.host import CpuSampler
from swarmdeck.probes.kernel_files import hold_open
from swarmdeck.probes.peer_prober import background_peer_prober
from swarmdeck.probes.usage import UsageTracker
from swarmdeck.snapshot import Snapshot, reconciled_snapshot
from swarmdeck.state import StateStore
from swarmdeck.views.sessions import waiting_text
from swarmdeck.watchdog.loop import Watchdog

STYLES = Path(__file__).resolve().parent.parent / "styles"
PANEL_CLASSES = {
    "hosts": HostsPanel, "jobs": JobsPanel, "agents": AgentsPanel, "gpus": GpusPanel,
    "locks": LocksPanel, "watchdog": WatchdogPanel, "alerts": AlertsPanel,
}
PANELS = tuple(PANEL_CLASSES)
"""Panel ids in the order the number keys and `tab` go through them."""

ELSEWHERE_KEYS = ("a", "k", "y", "d")
"""The keys of the Watchdog's and Alerts' rows: pressed where no row of theirs is selected,
they say what to select and where (or, read-only, that nothing is changed)."""

Prober = Callable[[], Snapshot]

ROW_ACTIONS = {"rerun": "jobs", "migrate": "jobs", "release_lock": "locks"}
"""Each action on a selected row, and the panel that owns the rows (and the action)."""

NARROW_WIDTH = 100
"""Screens fewer columns wide than this are narrow (the breakpoint class `-narrow`)."""


class SwarmdeckApp(App[int]):
    """One screen of panels; every panel watches the app's latest snapshot."""

    CSS_PATH = str(STYLES / "app.tcss")
    TITLE = "swarmdeck"
    VERTICAL_BREAKPOINTS = [(0, "-short"), (SHORT_HEIGHT, "-tall")]
    """A short screen collapses the panels out of focus to their title line (app/collapse.py)."""
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (NARROW_WIDTH, "-wide")]
    """On a narrow screen the focused Jobs panel widens over Agents (styles/app.tcss)."""
    BINDINGS = [
        Binding("question_mark", "help", "Help", key_display="?"),
        Binding("q", "quit", "Quit"),
        *(
            Binding(str(n), f"focus_panel('{panel}')", f"Focus {PANEL_CLASSES[panel].TITLE}",
                    show=False)
            for n, panel in enumerate(PANELS, start=1)
        ),
        *commands.bindings(),
        *(Binding(key, f"elsewhere('{key}')", show=False) for key in ELSEWHERE_KEYS),
    ]

    snapshot: var[Snapshot | None] = var(None)
    """The latest snapshot; every panel is bound to it."""
    sessions: var[list[SessionInfo] | None] = var(None)
    """The Claude Code sessions the Agents panel shows: the newest the sessions probe has
    (woken by transcript writes between snapshots), or the snapshot's with a given prober."""

    def __init__(
        self,
        config: Config,
        store: StateStore,
        *,
        prober: Prober | None = None,
        readonly: bool = False,
        terminal: int | None = None,
        watchdog: Watchdog | None = None,
        launch_cwd: Path | None = None,
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
            launch_cwd: The folder the launch form (`n`) starts in; by default the folder
                the app was started from.
        """
        super().__init__(driver_class=QuietInputDriver)
        self.config = config
        self.store = store
        self.gate = WriteGate(readonly)
        """Read-only mode: every key and action that changes anything asks it."""
        self.terminal = terminal
        self.launch_cwd = launch_cwd if launch_cwd is not None else Path.cwd()
        self.sessions_probe = SessionsProbe() if prober is None else None
        """Kept across snapshots and woken by transcript writes: transcripts are read once."""
        self._sessions_generation = -1
        self._waiting: set[str] = set()
        """Sessions seen waiting for the person at the last refresh: the bell rings for new ones."""
        self.snapshots_taken = 0
        """How many snapshots have reached the panels (what tests wait on)."""
        self._stop_watching = threading.Event()
        self.probe_loop = ProbeLoop(self._probe_round, config.ui.refresh_interval, self)
        self.peer_prober = background_peer_prober(config) if prober is None else None
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
        self.history = RoomHistory(self.history_points)
        """Each host's and running job's readings since the app started, for the detail views."""
        self._show_sub_title([])

    @property
    def history_points(self) -> int:
        """How many readings span `ui.history_minutes` at the refresh interval."""
        interval = max(0.25, self.config.ui.refresh_interval)
        return max(10, int(self.config.ui.history_minutes * 60 / interval))

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None:
        """Every notification, a widget's too, as plain text: it carries paths, commands and
        reasons from outside, whose brackets are no markup (a `[tmp]` or `[/]` in a path would
        vanish) and whose control characters are shown as escapes."""
        super().notify(
            printable(message), title=printable(title), severity=severity, timeout=timeout,
            markup=False,
        )

    def compose(self) -> ComposeResult:
        points = self.history_points
        bound = SwarmdeckApp.snapshot
        folder = self.sessions_probe.claude_dir if self.sessions_probe else Path(claude_dir())
        yield Header()
        yield HostsPanel(points, self.config.ui.history_minutes).data_bind(bound)
        with Horizontal(id="middle"):
            yield JobsPanel(self.config, self.store).data_bind(bound)
            yield AgentsPanel(folder).data_bind(SwarmdeckApp.sessions)
        with Horizontal(id="lower"):
            yield GpusPanel().data_bind(bound)
            yield LocksPanel().data_bind(bound)
        yield WatchdogPanel(self.store, gate=self.gate).data_bind(bound)
        yield AlertsPanel(self.store, gate=self.gate).data_bind(bound)
        yield FittedFooter()

    def on_mount(self) -> None:
        self.watch(self.screen_stack[0], "focused", self._collapse, init=True)
        self.probe_loop.start()
        if self.sessions_probe is not None:
            self.watch_transcripts()

    @work(thread=True, exclusive=True, group="sessions-watch", exit_on_error=False)
    def watch_transcripts(self) -> None:
        """Follow the transcripts in a thread; each batch of writes reaches the Agents panel
        through `sessions`, as the snapshots do."""
        probe = self.sessions_probe
        assert probe is not None
        for _ in sessions_watch.watch_sessions(probe, self._stop_watching):
            if self._stop_watching.is_set():
                return
            self.call_from_thread(self._take_sessions, *probe.reading())

    def _take_sessions(self, generation: int, sessions: list[SessionInfo]) -> None:
        """Show the probe's sessions unless newer ones are shown already."""
        if generation >= self._sessions_generation:
            self._sessions_generation = generation
            self.sessions = sessions

    def watch_sessions(self, sessions: list[SessionInfo] | None) -> None:
        self._show_sub_title(sessions or [])

    def _show_sub_title(self, sessions: list[SessionInfo]) -> None:
        """The header's second line: read-only, and how many sessions wait for the person and
        which has waited longest; with `ui.bell`, the terminal bell rings once for each session
        that starts waiting."""
        in_order = waiting_for_person(sessions)
        waiting = {session.session_id for session in in_order}
        if self.config.ui.bell and waiting - self._waiting:
            self.bell()
        self._waiting = waiting
        parts = ["read-only"] if self.gate.readonly else []
        if in_order:
            oldest = waiting_text(in_order[:1], time.time())
            which = ", the longest" if len(in_order) > 1 else ""
            parts.append(f"⚑ {len(in_order)} waiting for you{which}: {oldest}")
        self.sub_title = " · ".join(parts)

    def probe(self) -> None:
        """Refresh now: the probe thread takes its next snapshot at once (right after the one
        under way, if any). Safe from any thread."""
        self.probe_loop.probe()

    def _probe_round(self) -> Snapshot:
        """One round on the probe thread: a snapshot, with the watchdog's pass over it."""
        snapshot = self.prober()
        return snapshot if self.watchdog is None else self.watchdog.observe(snapshot)

    def on_unmount(self) -> None:
        self._stop_watching.set()
        self.probe_loop.stop()
        if self.peer_prober is not None:
            self.peer_prober.close()
        if self.watchdog is not None:
            self.watchdog.close()

    def on_probe_loop_snapshot_ready(self, message: ProbeLoop.SnapshotReady) -> None:
        self.history.observe(message.snapshot)
        self.snapshot = message.snapshot
        self.snapshots_taken += 1
        if self.size.height < SHORT_HEIGHT:
            # What is empty may have changed, and the card's height with it: collapse again once
            # the panels drew this snapshot.
            self.call_after_refresh(self._recollapse)
        if self.sessions_probe is not None:
            self._take_sessions(*self.sessions_probe.reading())
        else:
            self.sessions = message.snapshot.sessions
        # The stack, not self.screen: a snapshot can arrive while the app is closing, its
        # screens gone.
        top = self.screen_stack[-1] if self.screen_stack else None
        if isinstance(top, LaunchScreen):
            top.book_changed()
        self._leave_if_hung_up()

    def on_probe_loop_probe_failed(self, message: ProbeLoop.ProbeFailed) -> None:
        self.notify(f"probe failed: {message.error}", severity="error", timeout=8)
        self._leave_if_hung_up()

    def _leave_if_hung_up(self) -> None:
        """Checked once a probe round: the app ends with 129 when its terminal is gone."""
        if self.terminal is not None and hung_up(self.terminal):
            self.exit(return_code=ExitCode.TERMINAL_GONE)

    def on_keyed_table_row_selected(self, event: KeyedTable.RowSelected) -> None:
        """`enter` on a job, a finding or an alert opens its detail view."""
        key = event.key
        table = event.table.id
        if table == "jobs-table":
            self.push_screen(JobDetail(int(key), self.store, self.history))
        elif table == "findings-table":
            self.push_screen(FindingDetail(int(key)))
        elif table == "alerts-table":
            self.push_screen(AlertDetail(int(key)))

    def on_hosts_panel_opened(self, event: HostsPanel.Opened) -> None:
        """`enter` on a host card opens its detail view."""
        self.push_screen(HostDetail(event.name, self.history))

    def on_tree_node_selected(self, event: Tree.NodeSelected[str]) -> None:
        """`enter` on a session or subagent opens its detail view."""
        key = event.node.data
        if key is None or key.startswith(("h:", f"{FOLD}:")):
            return
        kind, session_id, *agent = key.split(":", 2)
        self.push_screen(AgentDetail(session_id, agent[0] if kind == "a" else None))

    def on_resize(self, _event: events.Resize) -> None:
        # This handler runs before App's own, which is where `self.size` takes the new size:
        # collapse once that is done, whichever way the size went (a collapse for the old size would
        # keep a short screen's layout on a tall one, or a tall one's on a short one).
        self.call_next(self._recollapse)

    def on_hosts_panel_resized(self, _message: HostsPanel.Resized) -> None:
        # The card's new height changes what the rows below may open: collapse again.
        self._recollapse()

    def _recollapse(self) -> None:
        """Collapse again for the main screen's focus, unless the app is closing (no screen)."""
        if self.screen_stack:
            self._collapse(self.screen_stack[0].focused)

    def _collapse(self, focused: Widget | None) -> None:
        """On a short screen, collapse all panels but the Jobs and Agents row and the row of the
        panel that holds the focus (the Hosts panel shows its glance instead), the focused row
        at most what the rest leaves; on a taller one, none. An idle room (no job, no session)
        opens the empty rows below as far as they fit beside the Jobs and Agents row at its
        least height (app/collapse.py)."""
        screen = self.screen_stack[0]
        rows: list[tuple[str, ...]] = []
        row_widgets: list[Widget] = []
        heights: list[int] = []
        open_row = 0
        middle = screen.query_one("#middle")
        for child in screen.children:
            if child is middle:
                open_row = len(rows)
            panels = [child] if child.has_class("panel") else list(child.query_children(".panel"))
            if panels:
                rows.append(tuple(str(panel.id) for panel in panels))
                row_widgets.append(child)
            elif isinstance(child, (Header, FittedFooter)) and child.display:
                heights.append(child.outer_size.height)
        holder = next(
            (w.id for w in (focused.ancestors_with_self if focused else []) if w.id in PANELS),
            None,
        )
        height = self.size.height
        short = height < SHORT_HEIGHT
        empty = frozenset(str(p.id) for p in screen.query(".panel") if p.has_class("-empty"))
        idle = short and all(str(p.id) in empty for p in middle.query_children(".panel"))
        least = middle.styles.min_height
        collapsed = collapsed_panels(rows, open_row, holder) if short else frozenset()
        glanced = glanced_panels(collapsed)
        collapsed -= glanced
        below = {panel for row in rows[open_row + 1:] for panel in row}
        hosts = screen.query_one(HostsPanel)
        glance = glance_lines(hosts.host_count, height) if "hosts" in glanced else 0
        hosts_open = "hosts" not in collapsed and not glance
        # A card that opens now has its height only once drawn open: the rows are seen to then.
        expanding = hosts_open and (hosts.collapsed or hosts.glance)
        taken = sum(heights) + int(least.value if least else EMPTY_HEIGHT) + glance
        if idle and holder not in below and not expanding and (
            not hosts_open or hosts.outer_size.height
        ):
            taken += sum(1 for row in rows if all(panel in collapsed for panel in row)) + (
                hosts.outer_size.height if hosts_open else 0
            )
            collapsed -= opened_rows(rows, collapsed, empty, height - taken)
        for panel in screen.query(SnapshotPanel):
            panel.collapsed = panel.id in collapsed
        hosts.glance = bool(glance)
        if hosts.styles.inline.max_height != (glance or None):
            hosts.styles.max_height = glance or None
        capped = short and holder in below
        if capped:
            taken += sum(1 for row in rows if all(panel in collapsed for panel in row))
        for row, widget in zip(rows, row_widgets, strict=True):
            cap = focused_height(height, taken) if capped and holder in row else None
            if widget is not hosts and widget.styles.inline.max_height != cap:
                widget.styles.max_height = cap
        if idle and expanding:
            self.call_after_refresh(self._recollapse)

    def action_focus_panel(self, panel_id: str) -> None:
        """Focus a panel: its table or tree when it shows one, else the panel itself.

        From a detail view the key goes back to the main screen first; over a modal (a form,
        a confirmation, help) it does nothing, so a digit never dismisses a decision.
        """
        while isinstance(self.screen, DetailScreen):
            self.pop_screen()
        if self.screen is not self.screen_stack[0]:
            return
        panel = self.screen.query_one(f"#{panel_id}")
        target = next(
            (w for w in panel.query("KeyedTable, SessionTree") if w.display and w.can_focus),
            panel,
        )
        target.focus()
        if isinstance(target, Tree) and target.cursor_line < 0:
            target.cursor_line = 0

    def action_focus_next(self) -> None:
        self._cycle_panels(1)

    def action_focus_previous(self) -> None:
        self._cycle_panels(-1)

    def _cycle_panels(self, step: int) -> None:
        """`tab` goes panel to panel on the main screen; elsewhere (a modal's fields) as usual."""
        if self.screen is not self.screen_stack[0]:
            if step > 0:
                self.screen.focus_next()
            else:
                self.screen.focus_previous()
            return
        focused = self.focused
        current = next(
            (i for i, panel in enumerate(PANELS)
             if focused is not None and any(a.id == panel for a in focused.ancestors_with_self)),
            -step,
        )
        self.action_focus_panel(PANELS[(current + step) % len(PANELS)])

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """In read-only mode no action that changes anything is offered."""
        return self.gate.offers(action in commands.MUTATING)

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        """Textual's own commands, then every key the help lists, by name (app/palette.py)."""
        offered = list(super().get_system_commands(screen))
        yield from offered
        yield from key_commands(self, self.gate, self.action_elsewhere, offered)

    def action_elsewhere(self, key: str) -> None:
        """A row key of the Watchdog's or Alerts' pressed where none of their rows is
        selected: what to select and where; read-only, that nothing is changed."""
        if self.gate.refuses(self):
            return
        wheres = dict.fromkeys(
            where for panel in self.screen_stack[0].query(StorePanel)
            if (where := panel.elsewhere(key))
        )
        if wheres:
            self.notify(f"select {' or '.join(wheres)} first", severity="warning")

    def on_key(self, event: events.Key) -> None:
        """Under `--readonly` an action's key is not bound (the footer does not offer it); it
        still says why nothing happens rather than nothing at all."""
        if not self.gate.readonly or self.screen is not self.screen_stack[0]:
            return
        action = next((a.action for a in commands.ACTIONS if a.key == event.key), None)
        if action is not None:
            self.refused(action)

    def refused(self, action: str) -> bool:
        """True (and says so) when read-only mode forbids `action`, however it was invoked."""
        return action in commands.MUTATING and self.gate.refuses(self, action)

    def action_launch(self) -> None:
        if self.refused("launch"):
            return
        def answered(request: RunRequest | None) -> None:
            if request is not None:
                self._launch(request, f"job {request.label or shlex.join(request.argv)}")

        jobs = self.screen_stack[0].query_one(JobsPanel)
        self.push_screen(
            LaunchScreen(self.config, self.store, jobs.local_book, self.launch_cwd,
                         cores=jobs.local_cores()),
            answered,
        )

    def action_rerun(self) -> None:
        self._row_action("rerun")

    def action_migrate(self) -> None:
        self._row_action("migrate")

    def action_release_lock(self) -> None:
        self._row_action("release_lock")

    def _row_action(self, action: str) -> None:
        """A key of a row action, wherever the focus is: the action of the panel that owns
        the rows, on the row under its cursor, unless read-only refuses it."""
        if not self.refused(action):
            panel = self.screen_stack[0].query_one(f"#{ROW_ACTIONS[action]}")
            getattr(panel, f"action_{action}")()

    def on_jobs_panel_launch_asked(self, message: JobsPanel.LaunchAsked) -> None:
        self._launch(message.request, message.what)

    def on_snapshot_panel_changed(self, _message: SnapshotPanel.Changed) -> None:
        self.probe()

    @work(thread=True, group="launch", exit_on_error=False)
    def _launch(self, request: RunRequest, what: str) -> None:
        """Start a detached runner; returns once it is admitted (or refused)."""
        started = launch_detached_said(request)
        if started.code == 0:
            self.call_from_thread(self.notify, f"{what}: admitted, runs detached")
        else:
            why = f": {started.said}" if started.said else ""
            self.call_from_thread(
                self.notify, f"{what}: not started (exit {started.code}){why}", severity="error",
                timeout=15,
            )
        self.probe()

    def action_help(self) -> None:
        panels = [(cls.TITLE, cls.BINDINGS, self.gate.readonly and issubclass(cls, StorePanel))
                  for cls in PANEL_CLASSES.values() if cls.BINDINGS]
        off = commands.MUTATING if self.gate.readonly else frozenset()
        self.push_screen(HelpScreen(key_list(self.BINDINGS, panels, off)))


def run_app(config: Config, store: StateStore, *, readonly: bool = False) -> int:
    """Run the control room until the person quits; returns the exit status.

    It reads the same kernel files at every refresh, so it holds them open between reads
    (probes/kernel_files.py)."""
    hold_open()
    app = SwarmdeckApp(config, store, readonly=readonly, terminal=controlling_tty())
    result = app.run()
    # An app that ended on an error it could not handle has shown the traceback: its status
    # says so (Textual's return code is 1 then), never 0.
    return result or app.return_code or 0
