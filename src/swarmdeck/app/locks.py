"""The Locks panel: who holds which workspace lock (alive or stale, since when) and who owns
which work directory."""

from __future__ import annotations

import time

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.reactive import reactive
from textual.widgets import Label

from swarmdeck.app.alerts import age_text
from swarmdeck.app.keyed_table import Cell, KeyedTable
from swarmdeck.probes.locks import HELD, LockState, OwnedDirectory
from swarmdeck.snapshot import Snapshot

COLUMNS = (
    ("kind", "kind"),
    ("path", "path"),
    ("state", "state"),
    ("session", "session"),
    ("pid", "pid"),
    ("what", "command / purpose"),
    ("since", "since"),
)

STATE_STYLES = {HELD: "green", "stale": "bold red", "in use": "yellow", "no owner": "dim"}


def lock_row(state: LockState, now: float) -> tuple[Cell, ...]:
    holder = state.holder
    label = state.state if not state.reason else f"{state.state}: {state.reason}"
    return (
        "lock",
        state.path or str(state.lock_file),
        Text(label, style=STATE_STYLES.get(state.state, "")),
        holder.session if holder else "",
        str(holder.pid) if holder else "",
        holder.command if holder else "",
        age_text(now - holder.since) if holder else "",
    )


def owner_row(entry: OwnedDirectory, now: float) -> tuple[Cell, ...]:
    row = entry.to_json()
    owner = entry.owner
    state = row["state"]
    label = state if not entry.used_by else f"{state} by {', '.join(map(str, entry.used_by))}"
    if entry.problem and owner is None:
        label = f"{state}: {entry.problem}"
    return (
        "dir",
        str(entry.directory),
        Text(label, style=STATE_STYLES.get(state, "")),
        owner.session if owner else "",
        "",
        owner.purpose if owner else "",
        age_text(now - owner.created_at) if owner else "",
    )


class LocksPanel(Vertical):
    """Workspace locks and work-directory owners, one row each, keyed by file or path."""

    snapshot: reactive[Snapshot | None] = reactive(None)
    """The latest snapshot of the whole room."""

    def __init__(self) -> None:
        super().__init__(id="locks", classes="panel")
        self.border_title = "Locks"

    def compose(self) -> ComposeResult:
        yield Label(
            "no workspace locks — take one with: swarmdeck lock acquire PATH", classes="empty"
        )
        yield KeyedTable(COLUMNS, id="locks-table")

    def watch_snapshot(self, snapshot: Snapshot | None) -> None:
        if snapshot is None:
            return
        now = time.time()
        rows: dict[str, tuple[Cell, ...]] = {}
        for item in snapshot.locks:
            if isinstance(item, LockState):
                rows[f"lock:{item.lock_file}"] = lock_row(item, now)
            elif isinstance(item, OwnedDirectory):
                rows[f"dir:{item.directory}"] = owner_row(item, now)
        self.query_one(".empty", Label).display = not rows
        table = self.query_one(KeyedTable)
        table.display = bool(rows)
        table.sync(rows)
