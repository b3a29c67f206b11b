"""Claude Code sessions as one-line rows: which, where, live or not, subagents, last activity."""

from __future__ import annotations

import os

from rich.text import Text

from swarmdeck.durations import NONE, age_text
from swarmdeck.probes.claude.sessions import SessionInfo
from swarmdeck.probes.claude.usage import PRICES_DATE, SessionFigures
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


def tokens_text(count: int) -> str:
    """A token count at a glance: 950, 12.3k, 4.1M."""
    if count < 1000:
        return str(count)
    if count < 1_000_000:
        return f"{count / 1000:.1f}k".replace(".0k", "k")
    return f"{count / 1_000_000:.1f}M".replace(".0M", "M")


def cost_text(cost: float | None) -> str:
    """Dollars, with the cents a small session spends still visible."""
    if cost is None:
        return "unpriced"
    return f"${cost:.4f}" if cost < 0.01 else f"${cost:.2f}"


def figures_label(figures: SessionFigures) -> str:
    """The Agents panel's few words on what a session used: `41.5k tok · $0.12 · ctx 12%`;
    empty before its first answer."""
    total = (figures.tokens_in + figures.tokens_out + figures.cache_read_tokens
             + figures.cache_write_tokens)
    if not total:
        return ""
    words = [f"{tokens_text(total)} tok", cost_text(figures.cost_usd)]
    if figures.context_fill is not None:
        words.append(f"ctx {figures.context_fill:.0%}")
    return " · ".join(words)


def figures_facts(figures: SessionFigures, now: float) -> list[tuple[str, str]]:
    """The agent detail view's lines on what a session used, its subagents included."""
    answer = figures.last_answer_at
    cost = cost_text(figures.cost_usd)
    if figures.cost_usd is None and figures.model:
        cost = f"unpriced ({figures.model} is not in the price table)"
    elif figures.cost_usd is not None:
        cost = f"{cost} at list prices of {PRICES_DATE}"
    context = NONE
    if figures.context_tokens is not None and figures.context_fill is not None:
        context = (f"{tokens_text(figures.context_tokens)} of"
                   f" {tokens_text(figures.context_window)} ({figures.context_fill:.0%})")
    return [
        ("tokens", f"in {tokens_text(figures.tokens_in)} · out {tokens_text(figures.tokens_out)}"
                   f" · cache read {tokens_text(figures.cache_read_tokens)}"
                   f" · cache write {tokens_text(figures.cache_write_tokens)}"),
        ("cost", cost),
        ("context", context),
        ("model", figures.model or NONE),
        ("last answer", NONE if answer is None else f"{age_text(now - answer)} ago"),
    ]
