"""Workspace locks and work-directory owners as rows: who holds what, alive or stale, since."""

from __future__ import annotations

from rich.text import Text

from swarmdeck.durations import age_text
from swarmdeck.probes.locks import HELD, LockState, OwnedDirectory
from swarmdeck.views.cells import Cell

COLUMNS = (
    ("kind", "kind"),
    ("state", "state"),
    ("since", "since"),
    ("session", "session"),
    ("path", "path"),
    ("pid", "pid"),
    ("what", "command / purpose"),
)
"""What is locked (the path) comes right after who holds it and since when; a long state
yields space to it in a narrow pane (YIELDING), and the holder's pid and command come last."""
YIELDING = ("state",)
KEPT = "path"

STATE_STYLES = {HELD: "green", "stale": "bold red", "in use": "yellow", "no owner": "dim"}


def lock_cells(state: LockState, now: float) -> dict[str, Cell]:
    holder = state.holder
    label = state.state if not state.reason else f"{state.state}: {state.reason}"
    return {
        "kind": "lock",
        "path": state.path or str(state.lock_file),
        "state": Text(label, style=STATE_STYLES.get(state.state, "")),
        "session": holder.session if holder else "",
        "pid": str(holder.pid) if holder else "",
        "what": holder.command if holder else "",
        "since": age_text(now - holder.since) if holder else "",
    }


def owner_cells(entry: OwnedDirectory, now: float) -> dict[str, Cell]:
    owner = entry.owner
    state = entry.to_json()["state"]
    label = state if not entry.used_by else f"{state} by {', '.join(map(str, entry.used_by))}"
    if entry.problem and owner is None:
        label = f"{state}: {entry.problem}"
    return {
        "kind": "dir",
        "path": str(entry.directory),
        "state": Text(label, style=STATE_STYLES.get(state, "")),
        "session": owner.session if owner else "",
        "pid": "",
        "what": owner.purpose if owner else "",
        "since": age_text(now - owner.created_at) if owner else "",
    }


def lock_table_rows(items: list[object], now: float) -> dict[str, dict[str, Cell]]:
    """The snapshot's `locks` list keyed by lock file or directory."""
    rows: dict[str, dict[str, Cell]] = {}
    for item in items:
        if isinstance(item, LockState):
            rows[f"lock:{item.lock_file}"] = lock_cells(item, now)
        elif isinstance(item, OwnedDirectory):
            rows[f"dir:{item.directory}"] = owner_cells(item, now)
    return rows
