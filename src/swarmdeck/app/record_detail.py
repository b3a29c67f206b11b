"""Detail views of a watchdog finding and of an alert (`enter` on their rows): the whole
message and the ready-made command, which the panels' one-line rows cut, wrapped to the width.

Both follow the app's snapshots: a finding acknowledged or resolved, an alert acknowledged or
resolved, says so instead of vanishing.
"""

from __future__ import annotations

import re
import time
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Footer, Static

from swarmdeck.app.alerts import AlertsPanel
from swarmdeck.app.detail import DetailScreen, fact_lines
from swarmdeck.app.quiet import show_text
from swarmdeck.app.watchdog import WatchdogPanel
from swarmdeck.durations import NONE, age_text
from swarmdeck.probes.store_rows import Alert, Finding
from swarmdeck.snapshot import Snapshot
from swarmdeck.watchdog.alerts import alert_command
from swarmdeck.watchdog.findings import passes_text
from swarmdeck.watchdog.kills import request_command
from swarmdeck.words import counted

NAME_WIDTH = 12
_QUOTED = re.compile(r"`([^`]+)`")


def _ago(now: float, at: float | None) -> str:
    return NONE if at is None else f"{age_text(now - at)} ago"


def finding_facts(finding: Finding, now: float, width: int) -> Text:
    """Everything a finding says, one fact a line; its advice's command on a line of its own, and
    the one that asks for its process to be stopped when it names one. How many watchdog
    passes saw it is said as passes: the count rises once a pass, not once an occurrence."""
    advice = finding.advice or NONE
    commands = _QUOTED.findall(advice)
    only_a_command = len(commands) == 1 and advice.strip() == f"`{commands[0]}`"
    kill = request_command(finding)
    facts = [
        ("rule", finding.rule),
        ("level", finding.severity),
        ("subject", finding.subject),
        ("message", finding.message),
        *(() if only_a_command else (("advice", advice),)),
        *(("command", command) for command in (*commands, *((kill,) if kill else ()))),
        ("seen", f"in {passes_text(finding.count)}, the last {_ago(now, finding.last_seen_at)}"),
        ("fired", _ago(now, finding.fired_at)),
        ("first seen", _ago(now, finding.first_seen_at)),
        ("host", finding.host or NONE),
        ("session", finding.session_id or NONE),
        ("job", NONE if finding.job_id is None else f"#{finding.job_id}"),
        ("process", NONE if finding.pid is None else f"pid {finding.pid}"),
        ("acknowledged", _ago(now, finding.acknowledged_at) + (
            f" by {finding.acknowledged_by}"
            if finding.acknowledged_at is not None and finding.acknowledged_by else ""
        )),
    ]
    return fact_lines(facts, NAME_WIDTH, width)


def alert_facts(alert: Alert, now: float, width: int) -> Text:
    """Everything an alert says, one fact a line; its ready-made command on a line of its own."""
    command = alert_command(alert.key, alert.message)
    facts = [
        ("level", alert.level),
        ("host", alert.host or NONE),
        ("message", alert.message),
        *((("command", command),) if command else ()),
        ("raised", counted(alert.count, "time")),
        ("first", _ago(now, alert.created_at)),
        ("last", _ago(now, alert.last_seen_at)),
        ("from", alert.source),
        ("key", alert.key),
    ]
    return fact_lines(facts, NAME_WIDTH, width)


class RecordDetail(DetailScreen):
    """One finding or alert by id, drawn again from each snapshot."""

    TITLE_TEXT = ""

    def __init__(self, record_id: int) -> None:
        """Args:
        record_id: The finding's or alert's id in the state file.
        """
        super().__init__()
        self.record_id = record_id

    def compose(self) -> ComposeResult:
        with VerticalScroll(classes="detail panel") as box:
            box.border_title = f"{self.TITLE_TEXT} {self.record_id}"
            yield Static("", id="record-facts")
        yield Footer()

    def follow(self, value: Any) -> None:
        show_text(self.query_one("#record-facts", Static), self.facts(value, time.time()))

    def facts(self, snapshot: Snapshot, now: float) -> Text:
        """What to show for this snapshot; each view says how (the base: nothing)."""
        return Text()


class FindingDetail(RecordDetail):
    """One open watchdog finding; `a` acknowledges it and `k` asks for its process to be
    stopped, as the Watchdog panel's keys do for its selected finding (its advice may say to)."""

    TITLE_TEXT = "Finding"
    BINDINGS = [
        Binding("a", "acknowledge", "Acknowledge"),
        Binding("k", "request_kill", "Request kill"),
    ]

    def _panel(self) -> WatchdogPanel:
        return self.app.screen_stack[0].query_one(WatchdogPanel)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Read-only, the keys are not offered (pressed, they say read-only)."""
        return self._panel().check_action(action, parameters)

    def _finding(self) -> Finding | None:
        """This finding as last seen open, or None after saying it no longer is."""
        snapshot = self._panel().snapshot
        finding = next((f for f in snapshot.findings if f.id == self.record_id), None) \
            if snapshot else None
        if finding is None:
            self.notify(f"finding {self.record_id} is no longer open: nothing done",
                        severity="warning")
        return finding

    def action_acknowledge(self) -> None:
        if self._panel().writable() and (finding := self._finding()) is not None:
            self._panel().acknowledge_finding(finding)

    def action_request_kill(self) -> None:
        if self._panel().writable() and (finding := self._finding()) is not None:
            self._panel().request_kill_for(finding)

    def facts(self, snapshot: Snapshot, now: float) -> Text:
        finding = next((f for f in snapshot.findings if f.id == self.record_id), None)
        if finding is None:
            return Text(f"finding {self.record_id} is no longer open (it resolved)")
        return finding_facts(finding, now, self.text_width)


class AlertDetail(RecordDetail):
    """One open alert; `a` acknowledges it, as the Alerts panel's key does its selected one."""

    TITLE_TEXT = "Alert"
    BINDINGS = [Binding("a", "acknowledge", "Acknowledge")]

    def _panel(self) -> AlertsPanel:
        return self.app.screen_stack[0].query_one(AlertsPanel)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Read-only, the key is not offered (pressed, it says read-only)."""
        return self._panel().check_action(action, parameters)

    def action_acknowledge(self) -> None:
        panel = self._panel()
        if not panel.writable():
            return
        snapshot = panel.snapshot
        alert = next((a for a in snapshot.alerts if a.id == self.record_id), None) \
            if snapshot else None
        if alert is None:
            self.notify(f"alert {self.record_id} is no longer open: nothing done",
                        severity="warning")
            return
        panel.acknowledge(alert)

    def facts(self, snapshot: Snapshot, now: float) -> Text:
        alert = next((a for a in snapshot.alerts if a.id == self.record_id), None)
        if alert is None:
            return Text(f"alert {self.record_id} is no longer open (acknowledged or resolved)")
        return alert_facts(alert, now, self.text_width)
