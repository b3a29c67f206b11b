"""Claude Code sessions as one-line rows: which, where, live or not, subagents, last activity."""

from __future__ import annotations

import os

from rich.text import Text

from swarmdeck.durations import NONE, age_text
from swarmdeck.probes.claude.sessions import SessionInfo
from swarmdeck.views.cells import Cell

COLUMNS = (
    ("session", "session"),
    ("cwd", "cwd"),
    ("live", "live"),
    ("subagents", "subagents running/all"),
    ("activity", "last activity"),
)
SHORT_ID = 8
"""Characters of a session id that tell sessions apart at a glance."""


def home_relative(path: str | None) -> str:
    """A path with the home folder written as ~."""
    if not path:
        return NONE
    home = os.path.expanduser("~")
    if home != "/" and (path == home or path.startswith(home + os.sep)):
        return "~" + path[len(home) :]
    return path


def session_name(session: SessionInfo) -> str:
    """What a session is called at a glance: its title, else its folder's name, else its id."""
    return session.title or (session.cwd or session.session_id).rstrip("/").rsplit("/", 1)[-1]


def waiting_text(sessions: list[SessionInfo], now: float) -> str:
    """The sessions waiting for the person, as given (oldest first), each with how long:
    `fan out the review (4m) · docs (1m)`."""
    return " · ".join(
        session_name(s)
        + ("" if s.waiting_since is None else f" ({age_text(now - s.waiting_since)})")
        for s in sessions
    )


def subagent_counts(session: SessionInfo) -> tuple[int, int]:
    """(running, all) subagents, counting those known so far only from hook events (the
    session's `hook_agents`: none the transcripts count already)."""
    hook_running = sum(1 for agent in session.hook_agents if agent.running)
    running = len(session.running_subagents()) + hook_running
    return running, len(session.subagents) + len(session.hook_agents)


def session_cells(session: SessionInfo, now: float) -> dict[str, Cell]:
    running, total = subagent_counts(session)
    if session.live:
        live = Text(f"live, {session.state}" if session.state else "live", style="green")
    else:
        live = Text("ended", style="dim")
    activity = session.last_activity_at
    return {
        "session": session.session_id[:SHORT_ID],
        "cwd": home_relative(session.cwd),
        "live": live,
        "subagents": Text(f"{running}/{total}", style="bold" if running else ""),
        "activity": NONE if activity is None else f"{age_text(now - activity)} ago",
    }
