"""The Watchdog panel: open findings (level, age, rule, subject, message) and the kill requests
waiting.

`a` acknowledges the selected finding, `k` asks for its process to be stopped (a kill request),
`y` opens the approve modal for the selected kill request, `d` denies it. Nothing is signalled
without the modal's Approve; `--readonly` refuses every one of these keys.
"""

from __future__ import annotations

import getpass
import time
from collections.abc import Callable
from dataclasses import replace

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Label

from swarmdeck.app.approve import ApproveScreen
from swarmdeck.app.keyed_table import KeyedTable
from swarmdeck.app.panel import NOTHING_TO_OPEN, DrawnPanel, Rows, StorePanel
from swarmdeck.app.quiet import show_subtitle
from swarmdeck.app.readonly import WriteGate
from swarmdeck.errors import SwarmdeckError
from swarmdeck.printable import printable
from swarmdeck.probes.store_rows import (
    Finding,
    KillRequest,
    open_alerts,
    open_findings,
    pending_kill_requests,
)
from swarmdeck.snapshot import Snapshot
from swarmdeck.state import StateStore
from swarmdeck.views.cells import in_order
from swarmdeck.views.records import KILL_COLUMNS, LEVEL_STYLES, finding_age, kill_cells
from swarmdeck.watchdog.findings import acknowledge
from swarmdeck.watchdog.kills import TreeMember, approve, deny, request_kill, stop_preview

TreeLister = Callable[[StateStore, KillRequest], list[TreeMember]]

FINDING_COLUMNS = (
    ("level", "level"),
    ("age", "age"),
    ("rule", "rule"),
    ("subject", "subject"),
    ("message", "message"),
)
"""No count of the watchdog passes that saw a finding: it rises once a pass, so it reads as
that many occurrences; the age says how long the finding has been open."""
CALL_RULES = frozenset({"long_tool_call", "wait_loop_without_timeout"})
"""Rules about a tool call in flight: while its session waits for the person, the call waits
too, and `k` says so instead of asking for a process to stop."""

SUBJECT_FLOOR = 32
"""The narrowest a long subject (a session and its whole command) is cut to so that the
message, what the rule saw, is drawn whole; the detail view has the subject whole."""


def finding_row(finding: Finding, now: float) -> dict[str, object]:
    from rich.text import Text

    return {
        "level": Text(finding.severity, style=LEVEL_STYLES.get(finding.severity, "")),
        "age": finding_age(finding, now),
        "rule": finding.rule + (" ✓" if finding.acknowledged_at else ""),
        "subject": finding.subject,
        "message": finding.message,
    }


class WatchdogPanel(StorePanel, DrawnPanel[tuple[Rows, Rows]]):
    """Findings keyed by id, then the pending kill requests keyed by id."""

    TITLE = "Watchdog"
    BINDINGS = [
        Binding("a", "acknowledge", "Acknowledge"),
        Binding("k", "request_kill", "Request kill"),
        Binding("y", "approve", "Approve kill"),
        Binding("d", "deny", "Deny kill"),
        NOTHING_TO_OPEN,
    ]
    ELSEWHERE = {
        "acknowledge": "a finding in the Watchdog panel (6)",
        "request_kill": "a finding in the Watchdog panel (6)",
        "approve": "a kill request in the Watchdog panel (6)",
        "deny": "a kill request in the Watchdog panel (6)",
    }

    def __init__(self, store: StateStore, *, gate: WriteGate) -> None:
        super().__init__(store, gate=gate, id="watchdog")
        self.tree_lister: TreeLister = stop_preview
        """What lists the processes a request's approval would stop, for the approve modal:
        this host's process table as it is now (pictures on fixed data give a fixed tree)."""

    def compose(self) -> ComposeResult:
        yield Label("no findings", classes="empty")
        yield KeyedTable(FINDING_COLUMNS, id="findings-table", yielding=("subject",),
                         kept="message", yielding_floor=SUBJECT_FLOOR)
        yield KeyedTable(KILL_COLUMNS, id="kills-table")

    def drawing(self, snapshot: Snapshot) -> tuple[Rows, Rows]:
        """The findings' rows and the kill requests'."""
        now = time.time()
        findings = {
            str(f.id): in_order(finding_row(f, now), FINDING_COLUMNS) for f in snapshot.findings
        }
        kills = {
            str(r.id): in_order(kill_cells(r, now), KILL_COLUMNS) for r in snapshot.kill_requests
        }
        return findings, kills

    def draw(self, snapshot: Snapshot, drawing: tuple[Rows, Rows]) -> None:
        findings, kills = drawing
        self.set_class(not findings and not kills, "-empty")
        self.query_one(".empty", Label).display = not findings
        table = self.query_one("#findings-table", KeyedTable)
        table.display = bool(findings)
        table.sync(findings)
        kill_table = self.query_one("#kills-table", KeyedTable)
        kill_table.display = bool(kills)
        kill_table.sync(kills)
        self.show_title()

    def on_keyed_table_scrolled(self, event: KeyedTable.Scrolled) -> None:
        """Where a findings column gives way (the message, at 80 columns), the bottom border
        says so, as a table panel's does; Right brings it in."""
        event.stop()
        if event.control is not self.query_one("#findings-table", KeyedTable):
            return
        hint = " ".join(part for part in ("←" if event.passed else "", "more columns",
                                          "→" if event.more else "") if part)
        show_subtitle(self, hint if event.passed or event.more else "")

    def tally(self) -> str:
        findings, kills = self._drawn or ({}, {})
        parts = [f"{len(findings)} open"] if findings else []
        if kills:
            parts.append(f"{len(kills)} kill {'request' if len(kills) == 1 else 'requests'}")
        return ", ".join(parts)

    def selected_finding(self) -> Finding | None:
        chosen = self.query_one("#findings-table", KeyedTable).cursor_key()
        found = self.snapshot.findings if self.snapshot else []
        return next((f for f in found if str(f.id) == chosen), None)

    def selected_request(self) -> KillRequest | None:
        """The kill request under the cursor, else the one for the selected finding, else the
        oldest pending."""
        pending = self.snapshot.kill_requests if self.snapshot else []
        chosen = self.query_one("#kills-table", KeyedTable).cursor_key()
        finding = self.selected_finding()
        return (
            next((r for r in pending if str(r.id) == chosen), None)
            or next((r for r in pending if finding and r.finding_key == finding.key), None)
            or (pending[0] if pending else None)
        )

    def _finding(self) -> Finding | None:
        """The selected finding, or None after saying why there is none."""
        finding = self.selected_finding()
        if finding is None:
            self.notify("no finding selected: the Watchdog panel (6) lists them",
                        severity="warning")
        return finding

    def _request(self) -> KillRequest | None:
        """The kill request to decide, or None after saying that none is pending."""
        request = self.selected_request()
        if request is None:
            self.notify("no kill request is pending: `k` on a finding asks for one",
                        severity="warning")
        return request

    def action_acknowledge(self) -> None:
        if self.writable() and (finding := self._finding()) is not None:
            self.acknowledge_finding(finding)

    def acknowledge_finding(self, finding: Finding) -> None:
        """Record that the person saw `finding` (the panel's key, or its detail view's)."""
        if not self.writable():
            return
        who = getpass.getuser()
        if acknowledge(self.store, finding.id, who, time.time()):
            self.notify(f"finding {finding.id} acknowledged by {who}")
        else:
            self.notify(f"finding {finding.id} is no longer open: nothing acknowledged",
                        severity="warning")
        self.reload()

    def action_request_kill(self) -> None:
        if self.writable() and (finding := self._finding()) is not None:
            self.request_kill_for(finding)

    def request_kill_for(self, finding: Finding) -> None:
        """Ask for `finding`'s process to be stopped (the panel's key, or its detail view's)."""
        if not self.writable():
            return
        waiting = self._waiting_call(finding)
        if waiting:
            self.notify(waiting, severity="warning")
            return
        try:
            made = request_kill(self.store, finding, getpass.getuser(), time.time())
        except SwarmdeckError as error:
            self.notify(error.message, severity="warning")
            return
        self.notify(f"kill request {made.id} for pid {made.pid}: `y` to review and approve")
        self.reload()

    def _waiting_call(self, finding: Finding) -> str:
        """Why a finding about a tool call has nothing to stop while its session waits for the
        person (the call has not started: Claude Code asks first); "" otherwise."""
        if finding.pid is not None or finding.rule not in CALL_RULES or self.snapshot is None:
            return ""
        session = next((s for s in self.snapshot.sessions
                        if s.session_id == finding.session_id and s.needs_person), None)
        if session is None:
            return ""
        what = f" ({printable(session.waiting_for)})" if session.waiting_for else ""
        return (f"session {session.session_id[:8]} waits for you{what}: its call is not running,"
                " so there is nothing to stop; answer it in that session's terminal")

    def action_approve(self) -> None:
        if not self.writable() or (request := self._request()) is None:
            return

        def decided(approved: bool | None) -> None:
            if approved:
                self.run_approval(request.id)
            else:
                self.notify(f"kill request {request.id}: cancelled; nothing was signalled")

        self.app.push_screen(ApproveScreen(request, self.tree_lister(self.store, request)), decided)

    @work(thread=True, exclusive=True, group="approve")
    def run_approval(self, request_id: int) -> None:
        """The stop waits up to its grace period: off the UI loop."""
        try:
            outcome = approve(self.store, request_id, getpass.getuser(), time.time())
        except SwarmdeckError as error:
            self.app.call_from_thread(self.notify, error.message, severity="error")
            return
        severity = "error" if outcome.result.startswith("refused") else "information"
        self.app.call_from_thread(
            self.notify, f"kill request {request_id}: {outcome.said}",
            severity=severity,
        )
        self.app.call_from_thread(self.reload)

    def action_deny(self) -> None:
        if not self.writable() or (request := self._request()) is None:
            return
        try:
            deny(self.store, request.id, getpass.getuser(), time.time())
        except SwarmdeckError as error:
            self.notify(error.message, severity="warning")
            return
        self.notify(f"kill request {request.id} denied; nothing was signalled")
        self.reload()

    def reload(self) -> None:
        """Show the records as they are now, without waiting for the next snapshot."""
        if self.snapshot is None:
            return
        self.snapshot = replace(
            self.snapshot,
            findings=open_findings(self.store),
            kill_requests=pending_kill_requests(self.store),
            alerts=open_alerts(self.store),
        )

