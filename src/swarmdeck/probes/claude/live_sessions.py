"""Which Claude Code sessions are running now, from `$CLAUDE_CONFIG_DIR/sessions/<pid>.json`.

Claude Code writes one such file per running process and removes it on exit. A file left behind
by a crash names a pid that may since have been reused, so a session counts as live only when its
pid is alive and, where the file records the process start (`procStart`, field 22 of the
process's stat line), that start still matches. The fields are undocumented; all are optional.

Being shown as live is not enough to be signalled: a kill may reach a session's process only
when it is proven to be that Claude Code process (`claude_code_processes`): the file's numeric
`procStart` is its start ticks, and its program is Claude Code's. A file without one (or with
macOS's date form) proves nothing about whatever holds its pid now.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from swarmdeck.probes.claude.transcript_fields import timestamp
from swarmdeck.probes.procs import (
    ProcessIdentity,
    arguments,
    executable,
    start_ticks,
    ticks_since_boot,
)
from swarmdeck.regular_files import read_regular

PID_FILE = re.compile(r"^(\d+)\.json$")
MAX_PID_FILE = 1024 * 1024
PROGRAM_NAMES = frozenset({"claude", "claude.exe"})
"""What Claude Code's own executable is called: the native binary as installed (`claude`, and
npm's `bin/claude.exe`, which 2.1.328 runs as itself)."""
PROGRAM_FOLDERS = ("/claude/versions/", "/@anthropic-ai/claude-code")
"""Where Claude Code's executable lives under another name: the native installer's
`~/.local/share/claude/versions/2.1.328`, npm's `@anthropic-ai/claude-code-linux-x64/claude`."""
VERSIONS_FOLDER = "versions"
VERSION_SHAPE = re.compile(r"[0-9]+\.[0-9]+\.[0-9]+")
"""The native installer keeps each version's binary as `versions/2.1.328`."""
NODE_SCRIPT = "@anthropic-ai/claude-code/cli.js"
"""The script older versions ran under node, which then named its process `claude`."""


@dataclass(frozen=True)
class LiveSession:
    """A running Claude Code process and the session it is in."""

    pid: int
    session_id: str
    cwd: str | None
    started_at: float | None
    status: str | None
    """busy, idle, waiting or shell, when the file says."""
    waiting_for: str | None
    name: str | None
    kind: str | None
    version: str | None
    proc_start: int | None
    """The process start the file recorded, to tell the process from a reuse of its pid."""
    updated_at: float | None = None
    """When the process last changed its status (`statusUpdatedAt`, else `updatedAt`, epoch
    milliseconds like `startedAt`): for a waiting session, when it began to wait."""
    entrypoint: str | None = None
    """How it was started: `cli` in a terminal, `sdk-cli` for `claude -p`, `sdk-*` from an
    SDK (`kind` says `interactive` for all of them)."""

    tmux: str | None = None
    """Where an interactive session runs in tmux: `session:@window.%pane`."""

    @property
    def mode(self) -> str | None:
        """`interactive` or `print` (`claude -p`, an SDK), by its entrypoint, else its kind."""
        if self.entrypoint is not None:
            return "print" if self.entrypoint.startswith("sdk") else "interactive"
        return self.kind


@dataclass(frozen=True)
class PidFiles:
    """What `sessions/` says: sessions running now, and sessions whose process is gone."""

    live: dict[str, LiveSession]
    ended: frozenset[str]
    """Sessions named by a pid file whose process is dead or whose pid was reused."""
    folder_exists: bool

    def process_starts(self) -> dict[str, float | None]:
        """When each live session's process started (None where its file does not say)."""
        return {sid: live.started_at for sid, live in self.live.items()}


def pid_files(claude_dir: Path) -> PidFiles:
    """Read every `sessions/<pid>.json`; an unreadable file is left out."""
    folder = claude_dir / "sessions"
    live: dict[str, LiveSession] = {}
    ended: set[str] = set()
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return PidFiles(live, frozenset(), folder.is_dir())
    for entry in entries:
        match = PID_FILE.match(entry.name)
        if match is None:
            continue
        # The path as a string: pathlib would intern the file's name anew at every refresh
        # (bench/results/app.md, the interned strings' table).
        session = read_pid_file(entry.path, int(match.group(1)))
        if session is None:
            continue
        if pid_matches(session.pid, session.proc_start):
            live[session.session_id] = session
        else:
            ended.add(session.session_id)
    return PidFiles(live, frozenset(ended - set(live)), True)


def claude_code_processes(claude_dir: Path) -> set[ProcessIdentity]:
    """The processes of live sessions proven to be Claude Code's (`is_claude_code`): the only
    session processes a kill may reach."""
    return {
        ProcessIdentity(live.pid, live.proc_start)
        for live in pid_files(claude_dir).live.values()
        if live.proc_start is not None
        and is_claude_code(live.pid, live.proc_start, live.version)
    }


def is_claude_code(pid: int, proc_start: int, version: str | None = None) -> bool:
    """Whether pid is the Claude Code process that recorded `proc_start`: it started then (field
    22 of its stat line), and it runs Claude Code's program (`is_claude_code_program`)."""
    if pid <= 1 or start_ticks(pid) != proc_start:
        return False
    program = executable(pid)
    if program is None:
        return False
    is_node = os.path.basename(program).startswith("node")
    return is_claude_code_program(program, arguments(pid) if is_node else [], version)


def is_claude_code_program(program: str, argv: list[str], version: str | None = None) -> bool:
    """Whether an executable (and, under node, its command line) is Claude Code's: named as
    Claude Code's is, or laid out as the native installer lays out the `version` its pid file
    records (`versions/2.1.328`, wherever that folder was copied)."""
    name = os.path.basename(program)
    if name in PROGRAM_NAMES or _is_version_binary(program, version) or any(
        folder in program for folder in PROGRAM_FOLDERS
    ):
        return True
    if not os.path.basename(program).startswith("node"):
        return False
    return argv[:1] == ["claude"] or any(word.endswith(NODE_SCRIPT) for word in argv)


def _is_version_binary(program: str, version: str | None) -> bool:
    """Whether `program` is `…/versions/VERSION` for a version shaped N.N.N: a pid file is any
    process's to write, so its `version` alone (`"sleep"`) proves nothing about a program."""
    return (
        version is not None
        and VERSION_SHAPE.fullmatch(version) is not None
        and os.path.basename(program) == version
        and os.path.basename(os.path.dirname(program)) == VERSIONS_FOLDER
    )


def read_pid_file(path: str | os.PathLike[str], pid_from_name: int) -> LiveSession | None:
    """The session a pid file describes, or None when it cannot be read as one (Claude Code
    names each file by its process's pid: a file whose `pid` says another is none of its)."""
    data = _load(path)
    if data is None:
        return None
    session_id = data.get("sessionId")
    if not isinstance(session_id, str) or not session_id:
        return None
    pid = data.get("pid")
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        pid = pid_from_name
    elif pid != pid_from_name:
        return None
    return LiveSession(
        pid=pid,
        session_id=session_id,
        cwd=_text(data.get("cwd")),
        started_at=timestamp(data.get("startedAt")),
        status=_text(data.get("status")),
        waiting_for=_text(data.get("waitingFor")),
        name=_text(data.get("name")),
        kind=_text(data.get("kind")),
        version=_text(data.get("version")),
        proc_start=_ticks(data.get("procStart")),
        updated_at=timestamp(data.get("statusUpdatedAt", data.get("updatedAt"))),
        entrypoint=_text(data.get("entrypoint")),
        tmux=_text(data.get("tmux")),
    )


def pid_matches(pid: int, proc_start: int | None) -> bool:
    """True when pid runs and, if the file recorded its start, it is the same process.

    A recorded start larger than the ticks since boot cannot be a start tick at all (another
    platform's clock, say); it then tells nothing and only the pid is checked.
    """
    ticks = start_ticks(pid)
    if ticks is None:
        return False
    if proc_start is None or proc_start > _ticks_since_boot():
        return True
    return proc_start == ticks


def _ticks_since_boot() -> int:
    """Ticks since boot and a minute more; 0 when unknown (then any recorded start tells)."""
    ticks = ticks_since_boot()
    return 0 if ticks is None else ticks + 60 * os.sysconf("SC_CLK_TCK")


def _ticks(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def _load(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    try:
        raw = read_regular(path, MAX_PID_FILE)
    except OSError:  # gone, too large, or a FIFO or device in its place: not a pid file
        return None
    try:
        data = json.loads(raw)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
