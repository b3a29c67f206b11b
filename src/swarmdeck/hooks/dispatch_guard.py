"""Optional dispatch guard: deny an Agent/Task call while the running subagents reach the limit.

`hooks.max_running_subagents` (0 = off) counts subagents across sessions. This session's are
read from its transcripts (the call being decided is not counted: its own tool_use may already
be written); other sessions' from their SubagentStart/SubagentStop hook events, for sessions
that may still run, judged as the Agents panel judges them (probes/claude/sessions.py): a
session whose Claude Code process runs (its pid file); where Claude Code writes no pid files,
one with a hook event in the last STALE_AFTER. The reason names the limit, what runs and that
rule, so the agent can wait for one to finish.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from swarmdeck.durations import age_text
from swarmdeck.hooks.payload import HookInput

SHOWN = 8
"""Running subagents named in the reason; the rest are an ellipsis."""


def guard_reason(hook: HookInput, limit: int, now: float | None = None) -> str | None:
    """Why a dispatch is over the limit (the subagent-limit guard's case), or None."""
    from swarmdeck.breaks import broken
    from swarmdeck.probes.claude.sessions import STALE_AFTER

    now = time.time() if now is None else now
    running = running_subagents(hook, now)
    if len(running) < limit or broken("guard-subagent-limit"):
        return None
    count = len(running)
    shown = "; ".join(running[:SHOWN]) + (", …" if count > SHOWN else "")
    are = f"{count} subagent is" if count == 1 else f"{count} subagents are"
    which = "it" if count == 1 else "one of them"
    return (
        f"{are} already running, the limit set by hooks.max_running_subagents is "
        f"{limit}. Wait for {which} to finish before dispatching another. Running: {shown}. "
        "Another session's subagent counts while that session is live: its Claude Code "
        "process runs, or, where Claude Code writes no pid files, it had a hook event in the "
        f"last {age_text(STALE_AFTER).removesuffix('m')} min."
    )


def running_subagents(hook: HookInput, now: float) -> list[str]:
    """One short description per subagent running now, this session's first."""
    from swarmdeck import paths
    from swarmdeck.hook_events import fold
    from swarmdeck.probes.claude.hook_activity import (
        HOOK_AGENT_WINDOW,
        last_hook_events,
        running_hook_agents,
        unseen_hook_agents,
    )
    from swarmdeck.probes.claude.live_sessions import pid_files
    from swarmdeck.probes.claude.sessions import session_subagents
    from swarmdeck.state import StateStore

    # The call being decided is not counted, nor does it stand for a hook agent: its
    # SubagentStart has not come yet.
    subagents = [
        sub for sub in session_subagents(hook.transcript_path)
        if sub.tool_use_id is None or sub.tool_use_id != hook.tool_use_id
    ]
    seen = {sub.id for sub in subagents}
    described = [
        f'"{sub.description or sub.id}" ({sub.type})'
        for sub in subagents
        if sub.status == "running"
    ]
    files = pid_files(Path(paths.claude_dir()))
    store = StateStore.open_default(verify=False)
    try:
        since = now - HOOK_AGENT_WINDOW
        by_session = running_hook_agents(store, since, files.process_starts())
        active: dict[str, float] = {}
        if not files.folder_exists:
            # Without pid files a session is live by its hook events, and the light Bash calls
            # wait in the spool: folded in first, they are activity too.
            fold(store)
            active = last_hook_events(store, since)
    finally:
        store.close()
    for session_id, agents in by_session.items():
        other = session_id != hook.session_id
        if other and not _counts(session_id, files, active, now):
            continue
        for agent in unseen_hook_agents(() if other else subagents, agents):
            if agent.agent_id in seen:
                continue
            seen.add(agent.agent_id)
            where = "" if session_id == hook.session_id else f" in session {session_id[:8]}"
            described.append(f"{agent.agent_id} ({agent.agent_type or 'subagent'}){where}")
    return described


def _counts(session_id: str, files: Any, active: dict[str, float], now: float) -> bool:
    """Whether another session's hook agent still counts: its session must be live, or, where
    no pid files tell, active within STALE_AFTER (the Agents panel's rule)."""
    from swarmdeck.probes.claude.sessions import STALE_AFTER

    if session_id in files.live:
        return True
    if files.folder_exists:
        return False
    return now - active.get(session_id, 0.0) < STALE_AFTER
