"""The watchdog engine, the same in the app's probe worker and in `swarmdeck watch`.

One pass: read the scene beside a snapshot, keep it in the history, run every rule, and upsert
the drafts (only while holding the writer's lease; otherwise the pass only reads). In the same
transaction the writer resolves the alerts no longer true; then it applies the escalation
policy. `watch_loop` is the headless loop at `watchdog.interval`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from swarmdeck.actions.alerts import raise_alert
from swarmdeck.errors import RefusedError
from swarmdeck.probes.kernel_files import hold_open, release_unread
from swarmdeck.probes.store_rows import Finding, open_alerts, open_findings, pending_kill_requests
from swarmdeck.watchdog.alerts import resolve_untrue
from swarmdeck.watchdog.escalation import escalates
from swarmdeck.watchdog.findings import (
    CRITICAL,
    PassOutcome,
    new_holder,
    passes_text,
    record_pass,
    release_lease,
)
from swarmdeck.watchdog.history import History
from swarmdeck.watchdog.kills import ESCALATION, approve, request_kill
from swarmdeck.watchdog.rules import evaluate
from swarmdeck.watchdog.scene import SceneReader

if TYPE_CHECKING:
    from swarmdeck.config import Config
    from swarmdeck.snapshot import Snapshot
    from swarmdeck.state import StateStore


@dataclass
class PassReport:
    """One pass: whether it wrote, what it found, what fired, what the policy stopped."""

    writer: bool
    drafts: int
    outcome: PassOutcome
    escalated: list[str] = field(default_factory=list)
    """One line per subject the escalation policy stopped."""


class Watchdog:
    """The engine: its history and transcript cache live as long as it does."""

    def __init__(self, config: Config, store: StateStore, holder: str | None = None) -> None:
        self.config = config
        self.store = store
        self.holder = holder or new_holder()
        self.history = History(config.watchdog.history)
        self.reader = SceneReader(config.watchdog.repeat_max)
        self._last_pass: float | None = None

    def run_pass(self, snapshot: Snapshot, now: float | None = None) -> PassReport:
        now = time.time() if now is None else now
        scene = self.reader.read(snapshot, self.store, now)
        drafts = evaluate(scene, self.history, self.config, now)
        self.history.add(scene)
        with self.store.transaction() as conn:
            outcome = record_pass(conn, drafts, self.config.watchdog, self.holder, now)
            if outcome.writer:
                resolve_untrue(conn, snapshot, now)
        report = PassReport(outcome.writer, len(drafts), outcome)
        if outcome.writer:
            report.escalated = self._escalate(outcome.seen, now)
        return report

    def observe(self, snapshot: Snapshot) -> Snapshot:
        """The snapshot with the records as they are after a pass over it; the pass is made
        only once `watchdog.interval` has gone by since the last (the app refreshes faster).
        Between passes the snapshot is given back as it is: it read the same records itself,
        and only a pass writes them here."""
        moment = time.monotonic()
        if self._last_pass is not None and moment - self._last_pass < self.config.watchdog.interval:
            return snapshot
        self._last_pass = moment
        self.run_pass(snapshot)
        return replace(
            snapshot,
            findings=open_findings(self.store),
            kill_requests=pending_kill_requests(self.store),
            alerts=open_alerts(self.store),
        )

    def close(self) -> None:
        """Let go of the writer's lease, so the other engine takes it at once."""
        release_lease(self.store, self.holder)

    def _escalate(self, seen: list[Finding], now: float) -> list[str]:
        after = self.config.watchdog.escalate_after
        lines = []
        for finding in seen:
            if not escalates(finding, after):
                continue
            try:
                request = request_kill(self.store, finding, ESCALATION, now)
            except RefusedError:
                continue  # its job or its process ended since the snapshot: nothing to stop
            decided = approve(self.store, request.id, ESCALATION, now)
            line = (
                f"{finding.rule} on {finding.subject} seen in {passes_text(finding.count)} without"
                f" acknowledgement: swarmdeck acted by itself ({decided.said})"
            )
            with self.store.transaction() as conn:
                conn.execute(
                    "UPDATE findings SET acknowledged_at = ?, acknowledged_by = ?"
                    " WHERE id = ?",
                    (now, ESCALATION, finding.id),
                )
                raise_alert(
                    conn, f"escalated:{finding.key}", CRITICAL, "watchdog", finding.host, line,
                    now,
                )
            lines.append(line)
        return lines


def watch_loop(
    engine: Watchdog,
    take: Callable[[], Snapshot],
    on_pass: Callable[[PassReport], bool],
    interval: float,
) -> None:
    """Pass after pass, `interval` seconds apart, until `on_pass` returns False; the kernel
    files each pass reads are held open between passes (probes/kernel_files.py)."""
    hold_open()
    while True:
        started = time.monotonic()
        report = engine.run_pass(take())
        release_unread()
        if not on_pass(report):
            return
        time.sleep(max(0.0, interval - (time.monotonic() - started)))
