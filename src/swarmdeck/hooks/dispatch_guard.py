"""Optional dispatch guard: deny an Agent/Task call while the running subagents reach the limit.

`hooks.max_running_subagents` (0 = off) counts subagents across sessions. This session's are
read from its transcripts (the call being decided is not counted: its own tool_use may already
be written); other sessions' from their SubagentStart/SubagentStop hook events, for sessions
still live. The reason names the limit and what runs, so the agent can wait for one to finish.
"""

from __future__ import annotations

import time
from typing import Any

from swarmdeck.hooks.contract import deny
from swarmdeck.hooks.payload import HookInput

HOOK_AGENT_WINDOW = 24 * 3600.0
QUIET_SESSION = 2 * 3600.0
"""Without pid files to tell live sessions, hook agents older than this are not counted."""


def guard_answer(hook: HookInput, limit: int, now: float | None = None) -> dict[str, Any] | None:
    now = time.time() if now is None else now
    running = running_subagents(hook, now)
    if len(running) < limit:
        return None
    shown = "; ".join(running[:8]) + (", …" if len(running) > 8 else "")
    return deny(
        f"swarmdeck: {len(running)} subagents are already running, the limit set by "
        f"hooks.max_running_subagents is {limit}. Wait for one of them to finish before "
        f"dispatching another. Running: {shown}"
    )


def running_subagents(hook: HookInput, now: float) -> list[str]:
    """One short description per subagent running now, this session's first."""
    from swarmdeck import paths
    from swarmdeck.probes.claude.hook_activity import running_hook_agents
    from swarmdeck.probes.claude.live_sessions import pid_files
    from swarmdeck.probes.claude.sessions import session_subagents
    from swarmdeck.state import StateStore

    subagents = session_subagents(hook.transcript_path)
    seen = {sub.id for sub in subagents}
    described = [
        f'"{sub.description or sub.id}" ({sub.type})'
        for sub in subagents
        if sub.status == "running" and sub.tool_use_id != hook.tool_use_id
    ]
    files = pid_files(paths.claude_dir())
    store = StateStore.open_default(verify=False)
    try:
        by_session = running_hook_agents(store, now - HOOK_AGENT_WINDOW, files.process_starts())
    finally:
        store.close()
    for session_id, agents in by_session.items():
        for agent in agents:
            if agent.agent_id in seen:
                continue
            other = session_id != hook.session_id
            if other and not _counts(session_id, agent.started_at, files, now):
                continue
            seen.add(agent.agent_id)
            where = "" if session_id == hook.session_id else f" in session {session_id[:8]}"
            described.append(f"{agent.agent_id} ({agent.agent_type or 'subagent'}){where}")
    return described


def _counts(session_id: str, started_at: float, files: Any, now: float) -> bool:
    """Whether another session's hook agent still counts: its session must be live."""
    if session_id in files.live:
        return True
    if files.folder_exists:
        return False
    return now - started_at <= QUIET_SESSION
