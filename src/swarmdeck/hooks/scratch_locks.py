"""Scratch folders held by subagents, and the folders a subagent made, for two guards.

scratch-lock: a dispatch whose prompt names `scratch: PATH` takes PATH for that subagent;
another dispatch naming it is denied while the holder lives (`take`, `name_holder`, `release`).
The holds are one small JSON file in the state folder, replaced whole under a lock file.

handback: the folders a subagent made are its scratch folder and what its Bash calls created,
read from its transcript with the shell parser (`made_folders`). A path git tracks is the
project's own, never one the subagent made: an obedient agent told to delete a `cp -r x tests/`
would delete the project's tests.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

from swarmdeck import paths
from swarmdeck.hooks.payload import HookInput

if TYPE_CHECKING:
    from typing import Any

LOCKS_NAME = "scratch-locks.json"
HOLD_FOR = 24 * 3600.0
MAX_FILE = 1024 * 1024
MAX_TRANSCRIPT = 16 * 1024 * 1024
SCRATCH_WORDS = ("scratch", "tmp", "temp", "build", "copy", "worktree")
HANDED_BACK = "handed back"
"""Key of {agent id: time} of the subagents that handed back (no absolute path is this)."""


def _file() -> str:
    return os.path.join(paths.state_dir(), LOCKS_NAME)


def _load() -> dict[str, Any]:
    from swarmdeck.regular_files import read_regular

    try:
        data = json.loads(read_regular(_file(), MAX_FILE))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _save(data: dict[str, Any]) -> None:
    from swarmdeck.regular_files import replace_private

    os.makedirs(os.path.dirname(_file()), exist_ok=True)
    replace_private(_file(), json.dumps(data).encode())


def _update(change: Any) -> Any:
    """Apply `change(holds)` under an exclusive lock of the holds file; its result."""
    import fcntl

    os.makedirs(paths.state_dir(), exist_ok=True)
    fd = os.open(_file() + ".lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        holds = _load()
        result = change(holds)
        _save(holds)
    finally:
        os.close(fd)
    return result


def _live(hold: Any, now: float) -> bool:
    return isinstance(hold, dict) and now - float(hold.get("since", 0)) < HOLD_FOR


def _other_holder(hold: Any, tool_use_id: str | None, now: float) -> str | None:
    """Who holds a folder by `hold`, other than the dispatch `tool_use_id`; None if free.

    A hold is live while it is younger than HOLD_FOR and, where Claude Code writes pid files,
    while its session's Claude Code process runs (probes/claude/live_sessions.py)."""
    if not _live(hold, now) or hold.get("tool_use_id") == tool_use_id:
        return None
    if not _session_live(hold.get("session_id")):
        return None
    who = hold.get("agent_id") or f"the dispatch {hold.get('tool_use_id')}"
    return f"subagent {who} of session {str(hold.get('session_id') or '')[:8]}"


def _session_live(session_id: object) -> bool:
    """Whether the holder's session may still run: its pid file says so, or none are kept."""
    from swarmdeck.probes.claude.live_sessions import pid_files

    files = pid_files(Path(paths.claude_dir()))
    if not files.folder_exists or not isinstance(session_id, str):
        return True
    return session_id in files.live


def take(path: str, hook: HookInput, now: float | None = None) -> str | None:
    """Take `path` for this dispatch if no other live one holds it: None when taken, else who
    holds it (checked and taken under one lock: of dispatches naming one folder at once, one
    gets it). A hold older than HOLD_FOR is not live (a session that died)."""
    now = time.time() if now is None else now

    def change(holds: dict[str, Any]) -> str | None:
        other = _other_holder(holds.get(path), hook.tool_use_id, now)
        if other is None:
            holds[path] = {"tool_use_id": hook.tool_use_id, "session_id": hook.session_id,
                           "agent_id": None, "since": now}
        return other

    return _update(change)


def name_holder(tool_use_id: str, agent_id: str, finished: bool = False,
                now: float | None = None) -> None:
    """The Agent call `tool_use_id` started `agent_id`: its hold is that agent's now, or is
    dropped when the agent has finished (`finished`, or its SubagentStop came first).

    The holder is known by the dispatch's tool_use_id, then by its agent id (PostToolUse of the
    Agent call gives `agentId`); its SubagentStop releases the folder. A foreground subagent's
    SubagentStop comes before the Agent call's PostToolUse, so a stop that finds no hold is
    remembered (HANDED_BACK), and the PostToolUse of a subagent that handed back (or whose
    `status` is "completed") drops the hold instead of naming it."""
    now = time.time() if now is None else now

    def change(holds: dict[str, Any]) -> None:
        stopped = holds.get(HANDED_BACK)
        done = finished or (isinstance(stopped, dict) and agent_id in stopped)
        for path in list(holds):
            hold = holds[path]
            if isinstance(hold, dict) and hold.get("tool_use_id") == tool_use_id:
                if done:
                    del holds[path]
                else:
                    hold["agent_id"] = agent_id

    if any(isinstance(h, dict) and h.get("tool_use_id") == tool_use_id
           for h in _load().values()):
        _update(change)


def held_by(agent_id: str) -> list[str]:
    return [path for path, hold in _load().items()
            if isinstance(hold, dict) and hold.get("agent_id") == agent_id]


def release(agent_id: str, now: float | None = None) -> None:
    """The subagent handed back: drop its holds, and remember it for a later name_holder."""
    now = time.time() if now is None else now

    def change(holds: dict[str, Any]) -> None:
        for path in [p for p, h in holds.items()
                     if isinstance(h, dict) and h.get("agent_id") == agent_id]:
            del holds[path]
        stopped = holds.get(HANDED_BACK)
        stopped = {key: since for key, since in stopped.items()
                   if isinstance(since, (int, float)) and now - since < HOLD_FOR} \
            if isinstance(stopped, dict) else {}
        stopped[agent_id] = now
        holds[HANDED_BACK] = stopped

    _update(change)


def made_folders(hook: HookInput) -> list[str]:
    """Folders the stopping subagent claimed or made, absolute: its scratch folder and what its
    Bash calls created (`git worktree add`, `git clone`, and `cp -r` or `mkdir` of a folder
    outside the project or named as scratch, copy or build), less what git tracks."""
    agent_id = hook.agent_id
    found = held_by(agent_id) if agent_id else []
    cwd = hook.cwd or os.getcwd()
    for command in _bash_commands(hook.text("agent_transcript_path")):
        for path in created_by(command, cwd):
            if path not in found:
                found.append(path)
    return found


def git_tracked(path: str) -> bool:
    """Whether git tracks `path` or anything under it (then it is the project's, not made)."""
    import subprocess

    folder = path if os.path.isdir(path) else os.path.dirname(path)
    try:
        done = subprocess.run(
            ["git", "-C", folder, "ls-files", "--", path], capture_output=True, timeout=5,
            check=False, stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0 and bool(done.stdout.strip())


def created_by(command: str, cwd: str) -> list[str]:
    """Folders this shell command creates that count as scratch copies or build folders."""
    from swarmdeck.hooks.shell_parse import parse

    made: list[str] = []
    for item in parse(command, cwd).commands:
        argv = item.argv
        program = item.program
        words = [a for a in argv[1:] if not a.startswith("-")]
        targets: list[str] = []
        if program == "git" and argv[1:3] == ["worktree", "add"]:
            targets = [a for a in argv[3:] if not a.startswith("-")][:1]
        elif program == "git" and len(words) >= 3 and words[0] == "clone":
            targets = words[2:3]
        elif program == "cp" and any(a in ("-r", "-R", "-a", "--recursive", "--archive") or
                                     (a.startswith("-") and not a.startswith("--") and
                                      ("r" in a or "R" in a or "a" in a)) for a in argv[1:]):
            targets = [w for w in words[-1:] if _scratch_like(w, cwd)]
        elif program == "mkdir":
            targets = [w for w in words if _scratch_like(w, cwd)]
        made += [os.path.normpath(os.path.join(cwd, t)) for t in targets]
    return made


def _scratch_like(path: str, cwd: str) -> bool:
    full = os.path.normpath(os.path.join(cwd, path))
    outside = not (full + "/").startswith(os.path.normpath(cwd) + "/")
    name = os.path.basename(full).lower()
    return outside or any(word in name for word in SCRATCH_WORDS)


def _bash_commands(transcript: str | None) -> list[str]:
    from swarmdeck.regular_files import read_regular

    if not transcript:
        return []
    try:
        data = read_regular(transcript, MAX_TRANSCRIPT)
    except OSError:
        return []
    commands = []
    for line in data.decode("utf-8", "replace").splitlines():
        if '"Bash"' not in line:
            continue
        try:
            record = json.loads(line)
        except ValueError:
            continue
        message = record.get("message") if isinstance(record, dict) else None
        content = message.get("content") if isinstance(message, dict) else None
        for block in content if isinstance(content, list) else []:
            if (isinstance(block, dict) and block.get("type") == "tool_use"
                    and block.get("name") == "Bash" and isinstance(block.get("input"), dict)):
                command = block["input"].get("command")
                if isinstance(command, str):
                    commands.append(command)
    return commands
