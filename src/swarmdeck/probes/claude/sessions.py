"""Claude Code sessions and their subagents, read from the transcripts under `$CLAUDE_CONFIG_DIR`.

Layouts read, oldest to newest: subagent turns inline in the main file (`isSidechain`), flat
`projects/<p>/agent-<id>.jsonl` files, and `projects/<p>/<sid>/subagents/**/agent-<id>.jsonl`
with `agent-<id>.meta.json`; `sessions/<pid>.json` says which sessions are running. Every file is
tailed: a refresh reads only what was appended since the last one, so its cost follows what was
written, not the size of the history. `SessionsProbe.refresh()` is synchronous; the app wakes it
with the changed paths from `sessions_watch.py`.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from swarmdeck import paths
from swarmdeck.errors import StateError
from swarmdeck.probes.claude.digest_set import DigestSet
from swarmdeck.probes.claude.hook_activity import (
    HOOK_AGENT_WINDOW,
    HookAgent,
    HookWait,
    ended_sessions,
    hook_waits,
    running_hook_agents,
    unseen_hook_agents,
)
from swarmdeck.probes.claude.jsonl_tail import JsonlTail
from swarmdeck.probes.claude.live_sessions import LiveSession, PidFiles, pid_files
from swarmdeck.probes.claude.session_titles import kept_titles
from swarmdeck.probes.claude.subagents import (
    COMPLETED,
    FAILED,
    AgentTranscript,
    SubagentInfo,
    predates_process,
    resolve_subagents,
)
from swarmdeck.probes.claude.swarm_health import SwarmHealth, swarm_health
from swarmdeck.probes.claude.transcript_facts import ToolCall, TranscriptFacts, in_flight_json
from swarmdeck.probes.claude.transcript_fields import is_internal_agent
from swarmdeck.probes.claude.usage import (
    NO_FIGURES,
    SessionFigures,
    UsageKey,
    added_usage,
    session_figures,
    summed_usage,
)
from swarmdeck.regular_files import read_regular

DEFAULT_MAX_AGE = 48 * 3600.0
"""Sessions whose transcripts were last written longer ago than this are not read (unless live)."""
KEEP_NEWEST = 50
"""The newest sessions are always read, however old."""
STALE_AFTER = 30 * 60.0
"""Hook-event subagents of a session quiet for this long (and not live) are not shown."""
REASSEMBLE_EVERY = 30.0
"""Seconds after which every session is re-decided even if no file changed (staleness is time)."""
MAX_META = 256 * 1024
KEEP_ENDED = 10
"""A session's ended subagents (completed or failed) kept whole, the newest; older ones are
retired once RETIRE_BATCH more have ended: their facts and their transcript's are let go and
they are only counted (SessionInfo.retired_finished, retired_failed), their tokens, their
dispatches and the bytes they put into the main context kept in the session's figures (its
parallelism over time then covers the subagents kept). A session that ran thousands of
subagents then costs what this many do, in memory and in each assembly: ten live sessions
keep the control room's memory flat over hours (bench/results/app.md, over hours). The
Agents panel shows the newest three on lines of their own and folds the rest anyway."""
RETIRE_BATCH = 5
"""Ended subagents past KEEP_ENDED before any is retired: retired in batches, a session is
not laid out again for each one that ends."""

if TYPE_CHECKING:
    from swarmdeck.state import StateStore

_AGENT_FILE = re.compile(r"^agent-(.+)\.jsonl$")
_AGENT_META = re.compile(r"^agent-(.+)\.meta\.json$")


def project_folder_name(cwd: str) -> str:
    """The folder Claude Code keeps a cwd's transcripts in: every non-alphanumeric becomes '-'."""
    return re.sub(r"[^A-Za-z0-9]", "-", cwd)


@dataclass
class SessionInfo:
    """One Claude Code session as the control room shows it."""

    session_id: str
    cwd: str | None
    git_branch: str | None
    title: str | None
    live: bool
    pid: int | None
    process_started_at: float | None
    """When the live process started, as its pid file says; None when not live or unsaid."""
    state: str | None
    """busy, idle, waiting… as the running process reports it; None when not live."""
    transcript_path: str
    version: str | None
    started_at: float | None
    last_activity_at: float | None
    tool_in_flight: ToolCall | None
    subagents: list[SubagentInfo]
    health: SwarmHealth
    hook_agents: list[HookAgent] = field(default_factory=list)
    """Subagents whose SubagentStart hook came and that the transcripts do not count yet, not
    even by a dispatch whose agent's own file is not written (`unseen_hook_agents`)."""
    waiting_for: str | None = None
    """What the live process waits on the person for (its pid file's `waitingFor`), while
    its state is `waiting`."""
    waiting_since: float | None = None
    """When it began waiting for the person (its pid file's `updatedAt`, the last change of
    its status), while its state is `waiting`; None otherwise or when the file does not say."""
    mode: str | None = None
    """`interactive` or `print` (`claude -p`, an SDK) while live, as its pid file tells."""
    tmux: str | None = None
    """The tmux pane the live session runs in (`session:@window.%pane`), as its pid file
    says; None when not live or not in tmux."""
    figures: SessionFigures = NO_FIGURES
    """Tokens, cost, context fill and last answer, its subagents' tokens included."""
    retired_finished: int = 0
    """Its ended subagents no longer listed in `subagents` (KEEP_ENDED), completed."""
    retired_failed: int = 0
    """...and failed."""
    hook_wait: HookWait | None = None
    """A Notification hook event asking for the person with nothing after it, where the pid
    file does not say `waiting`: `waiting_for` and `waiting_since` are then its message and
    time."""

    @property
    def needs_person(self) -> bool:
        """A session waiting for the person: a permission prompt, a question. The live process
        says so in its pid file, or its last hook event does."""
        return (self.live and self.state == "waiting") or self.hook_wait is not None

    def running_subagents(self) -> list[SubagentInfo]:
        return [s for s in self.subagents if s.status == "running"]

    def to_json(self) -> dict[str, Any]:
        """The flat object of the snapshot JSON, subagents nested as DESIGN.md asks."""
        out: dict[str, Any] = {
            "session_id": self.session_id,
            "cwd": self.cwd,
            "git_branch": self.git_branch,
            "title": self.title,
            "live": self.live,
            "pid": self.pid,
            "process_started_at": self.process_started_at,
            "state": self.state,
            "mode": self.mode,
            "tmux": self.tmux,
            "waiting_for": self.waiting_for,
            "waiting_since": self.waiting_since,
            "transcript_path": self.transcript_path,
            "version": self.version,
            "started_at": self.started_at,
            "last_activity_at": self.last_activity_at,
            **in_flight_json(self.tool_in_flight),
        }
        out.update(self.health.to_json())
        out.update(self.figures.to_json())
        out["subagents"] = [s.to_json() for s in self.subagents]
        out["hook_running_agents"] = [
            {"id": a.agent_id, "type": a.agent_type, "started_at": a.started_at}
            for a in self.hook_agents
        ]
        return out


@dataclass
class _Tracked:
    """One transcript file, its tail position and its facts."""

    path: Path
    agent_file: bool
    tail: JsonlTail = field(init=False)
    facts: TranscriptFacts = field(init=False)

    def __post_init__(self) -> None:
        self.tail = JsonlTail(self.path)
        self.facts = TranscriptFacts(agent_file=self.agent_file)

    def update(self) -> bool:
        """Take in what was appended; True when anything new was read or the file started over."""
        if not self.tail.changed():
            return False
        read = self.tail.read()
        if read.reset:
            self.facts = TranscriptFacts(agent_file=self.agent_file)
        self.facts.feed(read.records)
        return read.reset or bool(read.records) or read.gone


@dataclass
class _Session:
    """The files of one session: its main transcript and its subagents' folder."""

    session_id: str
    project_dir: Path
    main: _Tracked
    agents: dict[Path, _Tracked] = field(default_factory=dict)
    metas: dict[Path, tuple[float, dict[str, Any]]] = field(default_factory=dict)
    agents_usage: dict[UsageKey, list[int]] | None = None
    """Its agent files' tokens by model and price tier, summed; None once one of them changed.
    A line added to the main file alone then costs no pass over the agent files' counts."""
    retired_files: DigestSet = field(default_factory=DigestSet)
    """The names of its retired subagents' agent files (KEEP_ENDED): never followed again.
    Not a set of the names: a long session retires thousands, and pathlib interned each."""
    retired_usage: dict[UsageKey, list[int]] = field(default_factory=dict)
    """Its retired subagents' tokens by model and price tier, summed."""
    retired_finished: int = 0
    retired_failed: int = 0
    retired_context: list[int] = field(default_factory=lambda: [0, 0])
    """The bytes its retired subagents put into the main context: in all, and the most one did."""

    @property
    def subagents_dir(self) -> Path:
        return self.project_dir / self.session_id / "subagents"


class SessionsProbe:
    """Reads every recent Claude Code session incrementally; `refresh()` brings it up to date.

    Args:
        claude_dir: Claude Code's folder; default `paths.claude_dir()`.
        max_age: seconds; older sessions are not read, unless live or among the newest.
        keep_newest: how many of the newest sessions are read however old they are.
        clock: the time source (epoch seconds), replaceable in tests.
    """

    def __init__(
        self,
        claude_dir: Path | None = None,
        *,
        max_age: float = DEFAULT_MAX_AGE,
        keep_newest: int = KEEP_NEWEST,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.claude_dir = claude_dir if claude_dir is not None else Path(paths.claude_dir())
        self.max_age = max_age
        self.keep_newest = keep_newest
        self.clock = clock
        self._sessions: dict[str, _Session] = {}
        self._flat: dict[Path, _Tracked] = {}
        self._pids = PidFiles({}, frozenset(), False)
        self._seen_live: set[str] = set()
        self._names: dict[str, str] = {}
        """The name each session's pid file last gave, or the title swarmdeck's state kept for
        it (`attach_hook_agents`): its title once the process is gone (2.1.328 writes no title
        record into the transcript)."""
        self._running: set[str] = set()
        """Sessions known to run without a pid file saying so: the caller of a hook."""
        self._assembled: dict[str, SessionInfo] = {}
        self._dirty: set[str] = set()
        self._assembled_at = 0.0
        self._hook_running: dict[str, list[HookAgent]] = {}
        self._hook_waits: dict[str, HookWait] = {}
        self._hook_ended: dict[str, float] = {}
        """When each session whose last hook event is its SessionEnd ended, by session."""
        """Subagents running by their hook events, by session, as last handed to
        `attach_hook_agents`; every assembly adds the ones its transcripts do not show."""
        self.generation = 0
        """Counts the changes to what `sessions()` returns; a reader keeps the newest."""
        self._lock = threading.Lock()
        self.watched = False
        """Set while a watcher (sessions_watch.py) keeps this probe current."""

    @property
    def projects_dir(self) -> Path:
        return self.claude_dir / "projects"

    def refresh(self, changed: Iterable[str | os.PathLike[str]] | None = None) -> list[SessionInfo]:
        """Bring every session up to date: all files when `changed` is None, else only those."""
        with self._lock:
            now = self.clock()
            self._read_pid_files()
            if changed is None:
                self._scan(now)
            else:
                for path in changed:
                    self._follow(os.fspath(path), now)
            return self._assemble(now)

    def current(self) -> list[SessionInfo]:
        """Up to date: as the watcher last left them when one runs, else refreshed now."""
        if not self.watched:
            return self.refresh()
        with self._lock:
            return self._ordered()

    def sessions(self) -> list[SessionInfo]:
        """The sessions as of the last refresh."""
        with self._lock:
            return self._ordered()

    def reading(self) -> tuple[int, list[SessionInfo]]:
        """The sessions as of the last refresh with their generation, read together."""
        with self._lock:
            return self.generation, self._ordered()

    def attach_hook_agents(
        self,
        running: dict[str, list[HookAgent]],
        waits: dict[str, HookWait] | None = None,
        ended: dict[str, float] | None = None,
        titles: dict[str, str] | None = None,
    ) -> list[SessionInfo]:
        """Take the subagents that hook events say run (by session) and give each session the
        ones its transcripts do not show yet, and the sessions whose last hook event asks for
        the person (`waits`) their wait; the sessions that ended (`ended`, by their SessionEnd)
        are over at once; a session that is not live and has no title of its own takes the one
        kept for it (`titles`, session_titles.py). The sessions, up to date.

        The sessions handed out are never changed afterwards: a session whose hook subagents
        changed is replaced by a new one, under the lock, so a reader in another thread (the
        app's watcher) never sees a half-made or a changing list.
        """
        with self._lock:
            self._hook_running = running
            self._hook_waits = waits or {}
            now = self.clock()
            ended = ended or {}
            titled = {s: t for s, t in (titles or {}).items() if self._names.get(s) != t}
            if titled:
                self._names.update(titled)
                self._dirty |= set(titled)
            if ended != self._hook_ended:
                self._dirty |= set(ended) ^ set(self._hook_ended)
                self._dirty |= {s for s in ended if ended[s] != self._hook_ended.get(s)}
                self._hook_ended = ended
            if self._dirty:
                self._assemble(now)
            changed = False
            for sid, info in list(self._assembled.items()):
                agents = self._hooked(info, now)
                updated = self._with_wait(replace(info, hook_agents=agents), now)
                if updated != info:
                    self._assembled[sid] = updated
                    changed = True
            if changed:
                self.generation += 1
            return self._ordered()

    def session(self, session_id: str) -> SessionInfo | None:
        with self._lock:
            return self._assembled.get(session_id)

    def read_one(self, transcript_path: Path, *, running: bool = False) -> SessionInfo | None:
        """One session from its main transcript and its own subagents folder, nothing else.

        A subagent's own transcript (`<sid>/subagents/…/agent-<id>.jsonl`) stands for the
        session it belongs to. `running` says the session's process is known to run (a hook
        it called is asking), whatever its pid file says.
        """
        now = self.clock()
        self._read_pid_files()
        path = _main_transcript(Path(transcript_path))
        if not path.name.endswith(".jsonl"):
            return None
        session = self._track_main(path.name[: -len(".jsonl")], path.parent)
        if running:
            self._running.add(session.session_id)
        self._update_session(session)
        self._assemble(now)
        return self._assembled.get(session.session_id)

    # ---- discovery ------------------------------------------------------------------------

    def _read_pid_files(self) -> None:
        before = self._pids.live
        self._pids = pid_files(self.claude_dir)
        now_live = self._pids.live
        self._seen_live |= set(now_live)
        self._names.update((sid, live.name) for sid, live in now_live.items() if live.name)
        self._dirty |= {
            sid for sid in before.keys() | now_live.keys() if before.get(sid) != now_live.get(sid)
        }

    def _fresh(self, mtime: float, now: float) -> bool:
        return now - mtime <= self.max_age

    def _scan(self, now: float) -> None:
        """List every project folder, start tracking recent sessions, read what was appended.

        Recent means written within max_age, or live, or among the keep_newest newest: a
        folder of old transcripts (a copy, an archive) is still shown, while a long history
        does not make every refresh read months of sessions.
        """
        mains: list[tuple[float, str, Path]] = []
        flats: list[tuple[float, Path]] = []
        for project in _dirs(self.projects_dir):
            for entry in _entries(project):
                name = entry.name
                if not name.endswith(".jsonl") or not _is_file(entry):
                    continue
                if name.startswith("agent-"):
                    if _subagent_file(name):
                        flats.append((_mtime(entry), Path(entry.path)))
                else:
                    mains.append((_mtime(entry), name[: -len(".jsonl")], project))
        mains.sort(reverse=True)
        flats.sort(reverse=True)
        keep: set[str] = set()
        for rank, (mtime, sid, project) in enumerate(mains):
            if rank < self.keep_newest or self._fresh(mtime, now) or sid in self._pids.live:
                keep.add(sid)
                self._track_main(sid, project)
        flat_keep: set[Path] = set()
        for rank, (mtime, path) in enumerate(flats):
            if rank < self.keep_newest * 20 or self._fresh(mtime, now) or path in self._flat:
                flat_keep.add(path)
                self._track_flat(path)
        for sid, live in self._pids.live.items():
            if sid not in keep and live.cwd:
                project = self.projects_dir / project_folder_name(live.cwd)
                if (project / f"{sid}.jsonl").exists():
                    keep.add(sid)
                    self._track_main(sid, project)
        for sid in set(self._sessions) - keep:
            del self._sessions[sid]
            self._assembled.pop(sid, None)
        for path in set(self._flat) - flat_keep:
            del self._flat[path]
        for session in self._sessions.values():
            self._find_agents(session)
            self._update_session(session)
        for tracked in self._flat.values():
            if tracked.update() and tracked.facts.session_id:
                self._dirty.add(tracked.facts.session_id)

    def _follow(self, changed: str, now: float) -> None:
        """React to one changed path reported by the watcher. It is routed by its string and
        made a Path only once it is a transcript to follow: pathlib interns each name it
        parses, and a name made and dropped at each change (a pid file's, a meta file's, a
        retired agent's) takes a fresh entry of the interned strings' table each time (see
        _read_meta). An agent's meta file, written before its transcript, starts following
        the agent once the transcript is there, so the path made for it is the one the
        transcript's changes find; before, it waits for the transcript's own change."""
        prefix = f"{self.projects_dir}{os.sep}"
        if not changed.startswith(prefix):
            return
        parts = [part for part in changed[len(prefix):].split(os.sep) if part not in ("", ".")]
        if len(parts) < 2:
            return
        name = parts[-1]
        meta = _AGENT_META.match(name)
        project = self.projects_dir / parts[0]
        if len(parts) == 2:
            if meta is not None or not name.endswith(".jsonl"):
                return
            if name.startswith("agent-"):
                if _subagent_file(name):
                    tracked = self._track_flat(project / name)
                    if tracked.update() and tracked.facts.session_id:
                        self._dirty.add(tracked.facts.session_id)
                return
            sid = name[: -len(".jsonl")]
            known = sid in self._sessions
            session = self._track_main(sid, project)
            if not known:
                self._update_session(session)
            elif session.main.update():
                self._dirty.add(sid)
            return
        session = self._sessions.get(parts[1])
        if session is None:
            if (project / f"{parts[1]}.jsonl").exists():
                self._update_session(self._track_main(parts[1], project))
            return
        agent = f"agent-{meta.group(1)}.jsonl" if meta else name
        if not _subagent_file(agent) or agent in session.retired_files:
            return
        folder = os.path.dirname(changed)
        if meta is not None and not os.path.isfile(os.path.join(folder, agent)):
            return
        path = Path(folder, agent)
        tracked = session.agents.get(path)
        if tracked is None:
            tracked = session.agents[path] = _Tracked(path, agent_file=True)
        if self._update_agent(session, path, tracked):
            self._dirty.add(session.session_id)

    def _track_main(self, sid: str, project: Path) -> _Session:
        session = self._sessions.get(sid)
        if session is None:
            main = _Tracked(project / f"{sid}.jsonl", agent_file=False)
            session = self._sessions[sid] = _Session(sid, project, main)
            self._find_agents(session)
        return session

    def _track_flat(self, path: Path) -> _Tracked:
        tracked = self._flat.get(path)
        if tracked is None:
            tracked = self._flat[path] = _Tracked(path, agent_file=True)
        return tracked

    def _find_agents(self, session: _Session) -> None:
        """Start tracking agent files under the session's subagents folder, nested ones too."""
        root = session.subagents_dir
        if not root.is_dir():
            return
        for folder, _dirnames, filenames in os.walk(root):
            for name in filenames:
                if name in session.retired_files:
                    continue
                if _subagent_file(name) and os.path.isfile(os.path.join(folder, name)):
                    path = Path(folder) / name
                    if path not in session.agents:
                        session.agents[path] = _Tracked(path, agent_file=True)

    def _update_session(self, session: _Session) -> None:
        changed = session.main.update()
        for path, tracked in list(session.agents.items()):
            changed = self._update_agent(session, path, tracked) or changed
        if changed:
            self._dirty.add(session.session_id)

    def _update_agent(self, session: _Session, path: Path, tracked: _Tracked) -> bool:
        """Take in what an agent file appended, forget it once removed, reread its meta.json."""
        changed = tracked.update()
        if tracked.tail.size == 0 and not path.exists():
            del session.agents[path]
            session.metas.pop(path, None)
            session.agents_usage = None
            return True
        if changed:
            session.agents_usage = None
        return self._read_meta(session, path) or changed

    def _read_meta(self, session: _Session, agent_path: Path) -> bool:
        """(Re)read `agent-<id>.meta.json` beside an agent file when it changed."""
        # A string, not a Path: pathlib would intern its name anew at every change of the
        # agent file (bench/results/app.md, the interned strings' table).
        meta_path = os.fspath(agent_path)[: -len(".jsonl")] + ".meta.json"
        try:
            mtime = os.stat(meta_path).st_mtime
        except OSError:
            return session.metas.pop(agent_path, None) is not None
        known = session.metas.get(agent_path)
        if known is not None and known[0] == mtime:
            return False
        session.metas[agent_path] = (mtime, _load_meta(meta_path))
        return True

    # ---- assembly -------------------------------------------------------------------------

    def _assemble(self, now: float) -> list[SessionInfo]:
        if now - self._assembled_at >= REASSEMBLE_EVERY:
            self._dirty |= set(self._sessions) | set(self._pids.live)
            self._assembled_at = now
        for sid in list(self._dirty):
            info = self._assemble_one(sid, now)
            if info is None:
                self._assembled.pop(sid, None)
            else:
                info.hook_agents = self._hooked(info, now)
                self._assembled[sid] = self._with_wait(info, now)
        if self._dirty:
            self.generation += 1
        self._dirty.clear()
        return self._ordered()

    def _with_wait(self, info: SessionInfo, now: float) -> SessionInfo:
        """The session with its hook wait: none where its pid file says it waits (the file
        says it all) or changed its status after the wait began, once the session is over, or
        for a quiet session whose liveness is unknown."""
        wait = self._hook_waits.get(info.session_id)
        if (info.live and info.state == "waiting") or not self._may_run(info, now):
            wait = None
        elif wait is not None and self._status_after(info.session_id, wait.since):
            # A declined prompt raises no hook: only the pid file's newer status tells.
            wait = None
        if wait == info.hook_wait:
            return info
        return replace(
            info,
            hook_wait=wait,
            waiting_for=wait.what if wait else None,
            waiting_since=wait.since if wait else None,
        )

    def _live(self, sid: str) -> LiveSession | None:
        """The session's live process, unless its SessionEnd came since that process began."""
        return None if sid in self._ended_now() else self._pids.live.get(sid)

    def _ended_now(self) -> set[str]:
        """The sessions over by their SessionEnd: no process of theirs started after it."""
        out = set()
        for sid, at in self._hook_ended.items():
            live = self._pids.live.get(sid)
            if live is None or live.started_at is None or live.started_at <= at:
                out.add(sid)
        return out

    def _status_after(self, sid: str, since: float) -> bool:
        """True when the session's live process changed its status after `since`."""
        live = self._pids.live.get(sid)
        return live is not None and live.updated_at is not None and live.updated_at > since

    def _may_run(self, info: SessionInfo, now: float) -> bool:
        """Live, or of unknown liveness and active lately: not a session known to be over."""
        if not info.live and self._session_over(info.session_id):
            return False
        return info.live or now - (info.last_activity_at or 0.0) < STALE_AFTER

    def _hooked(self, info: SessionInfo, now: float) -> list[HookAgent]:
        """The hook-event subagents of a session that its transcripts do not count: none once
        the session is over, nor for a quiet session whose liveness is unknown."""
        if not self._may_run(info, now):
            return []
        return unseen_hook_agents(info.subagents, self._hook_running.get(info.session_id, []))

    def _ordered(self) -> list[SessionInfo]:
        return sorted(
            self._assembled.values(),
            key=lambda s: (not s.live, -(s.last_activity_at or 0.0), s.session_id),
        )

    def _assemble_one(self, sid: str, now: float) -> SessionInfo | None:
        session = self._sessions.get(sid)
        live = self._live(sid)
        if session is None or not session.main.path.exists():
            return _live_without_transcript(live, self.projects_dir, now) if live else None
        facts = session.main.facts
        agents = [self._agent_transcript(session, path, t) for path, t in session.agents.items()]
        agents.extend(
            AgentTranscript(path, _agent_id(path, t.facts), t.facts, {}, t.tail.mtime)
            for path, t in self._flat.items()
            if t.facts.session_id == sid
        )
        over = self._session_over(sid)
        process_start = live.started_at if live else None
        subagents = resolve_subagents(
            facts, agents, session_over=over, process_started_at=process_start
        )
        retired = self._retire(session, subagents)
        if retired:
            subagents = [sub for sub in subagents if sub.id not in retired]
        call = facts.main.in_flight()
        if over or (call is not None and predates_process(call.started_at, process_start)):
            call = None
        if session.agents_usage is None:
            session.agents_usage = summed_usage(t.facts.usage for t in session.agents.values())
        flat = (t.facts.usage.by_model for t in self._flat.values() if t.facts.session_id == sid)
        figures = session_figures(
            [facts.usage.by_model, session.agents_usage, session.retired_usage, *flat],
            facts.model,
            facts.context_input,
            facts.last_answer_at,
        )
        activity = [facts.last_at] + [s.last_activity_at for s in subagents]
        known = [t for t in activity if t is not None]
        return SessionInfo(
            session_id=sid,
            cwd=facts.cwd or (live.cwd if live else None),
            git_branch=facts.git_branch,
            title=facts.title or (live.name if live else self._names.get(sid)),
            live=live is not None,
            pid=live.pid if live else None,
            process_started_at=process_start,
            state=live.status if live else None,
            transcript_path=str(session.main.path),
            version=facts.version or (live.version if live else None),
            started_at=facts.first_at or (live.started_at if live else None),
            last_activity_at=max(known) if known else None,
            tool_in_flight=call,
            subagents=subagents,
            health=self._health(session, subagents, facts.main.context_tokens, now),
            waiting_for=live.waiting_for if live else None,
            waiting_since=_waiting_since(live),
            mode=live.mode if live else None,
            tmux=live.tmux if live else None,
            figures=figures,
            retired_finished=session.retired_finished,
            retired_failed=session.retired_failed,
        )

    @staticmethod
    def _health(
        session: _Session, subagents: list[SubagentInfo], context_tokens: int | None, now: float
    ) -> SwarmHealth:
        """The session's swarm health, its retired subagents' dispatches and context bytes
        counted in."""
        health = swarm_health(subagents, context_tokens, now)
        retired = session.retired_finished + session.retired_failed
        if not retired:
            return health
        return replace(
            health,
            dispatches=health.dispatches + retired,
            context_bytes_total=health.context_bytes_total + session.retired_context[0],
            context_bytes_max=max(health.context_bytes_max, session.retired_context[1]),
        )

    def _retire(self, session: _Session, subagents: list[SubagentInfo]) -> set[str]:
        """Retire the session's oldest ended subagents beyond the newest KEEP_ENDED, once
        RETIRE_BATCH more have ended; their ids. Only a subagent of the main
        thread that started none of its own is retired, and only one whose dispatch the main
        transcript holds and whose own transcript (if any) is one of its subagents' folder."""
        facts = session.main.facts
        parents = {sub.parent_id for sub in subagents if sub.parent_id}
        ended = [
            sub for sub in subagents
            if sub.status in (COMPLETED, FAILED) and sub.parent_id is None
            and sub.id not in parents and sub.tool_use_id in facts.dispatches
            and (sub.transcript_path is None or Path(sub.transcript_path) in session.agents)
        ]
        if len(ended) <= KEEP_ENDED + RETIRE_BATCH:
            return set()
        ended.sort(key=lambda sub: (sub.ended_at or sub.started_at or 0.0, sub.id))
        gone = ended[:-KEEP_ENDED]
        idents: set[str] = set()
        for sub in gone:
            idents.update(ident for ident in (sub.id, sub.tool_use_id) if ident)
            if sub.transcript_path is not None:
                path = Path(sub.transcript_path)
                tracked = session.agents.pop(path)
                session.metas.pop(path, None)
                session.retired_files.add(path.name)
                session.retired_usage = added_usage(
                    [session.retired_usage, tracked.facts.usage.by_model]
                )
            session.retired_context[0] += sub.context_bytes
            session.retired_context[1] = max(session.retired_context[1], sub.context_bytes)
            if sub.status == FAILED:
                session.retired_failed += 1
            else:
                session.retired_finished += 1
        facts.forget(idents)
        session.agents_usage = None
        return {sub.id for sub in gone}

    def _agent_transcript(
        self, session: _Session, path: Path, tracked: _Tracked
    ) -> AgentTranscript:
        meta = session.metas.get(path, (0.0, {}))[1]
        agent_id = _agent_id(path, tracked.facts)
        return AgentTranscript(path, agent_id, tracked.facts, meta, tracked.tail.mtime)

    def _session_over(self, sid: str) -> bool:
        """True unless the session's process may still run: a subagent of a session that is
        not live is not running either, so every reader (`status`, the app, the JSON) agrees.

        Over means: not live now, and this Claude Code writes pid files (`sessions/` exists),
        or the session's own pid file names a dead (or reused) pid, or this probe saw it live.
        Only a Claude Code that writes no pid files at all leaves liveness unknown; its
        subagents then keep the status their transcripts give them.
        """
        if sid in self._ended_now():
            return True
        if sid in self._pids.live or sid in self._running:
            return False
        return self._pids.folder_exists or sid in self._seen_live or sid in self._pids.ended


def sessions_with_hooks(probe: SessionsProbe, store: StateStore) -> list[SessionInfo]:
    """The probe's sessions brought up to date, each with the subagents its hook events say
    started (and did not stop) that its transcripts do not show yet, its wait for the person
    where its last hook event asks for one, and, once it ended untitled, the title kept for it
    while it ran. Only reads the store: `keep_titles` is the readers' one write."""
    sessions = probe.current()
    now = probe.clock()
    starts = {s.session_id: s.process_started_at for s in sessions}
    untitled = [s.session_id for s in sessions if not s.live and not s.title]
    try:
        running = running_hook_agents(store, now - HOOK_AGENT_WINDOW, starts)
        waits = hook_waits(store, now - HOOK_AGENT_WINDOW)
        ended = ended_sessions(store, now - HOOK_AGENT_WINDOW)
        titles = kept_titles(store, untitled)
    except (sqlite3.Error, StateError):
        # Hook events and kept titles only add to what the transcripts say; without them the
        # view is still true.
        running, waits, ended, titles = {}, {}, {}, {}
    return probe.attach_hook_agents(running, waits, ended, titles)


def read_session(
    transcript_path: Path, claude_dir: Path | None = None, *, running: bool = False
) -> SessionInfo | None:
    """One session from its transcript path (what a hook is given), read from scratch;
    `running` as in `SessionsProbe.read_one`."""
    return SessionsProbe(claude_dir).read_one(transcript_path, running=running)


def _main_transcript(path: Path) -> Path:
    """The session's main transcript for a path that may be one of its subagents' files."""
    parts = path.parts
    if _AGENT_FILE.match(path.name) and "subagents" in parts[:-1]:
        folder = parts.index("subagents")
        if folder >= 2:
            return Path(*parts[: folder - 1]) / f"{parts[folder - 1]}.jsonl"
    return path


def session_subagents(transcript_path: str | None) -> list[SubagentInfo]:
    """The subagents of the session whose main transcript this is (what a hook is given: the
    session is running, it called the hook); none when there is no such file."""
    if not transcript_path or not Path(transcript_path).is_file():
        return []
    session = read_session(Path(transcript_path), running=True)
    return session.subagents if session else []


def _live_without_transcript(live: LiveSession, projects: Path, now: float) -> SessionInfo:
    """A running session that has not written its transcript yet."""
    folder = project_folder_name(live.cwd) if live.cwd else ""
    return SessionInfo(
        session_id=live.session_id,
        cwd=live.cwd,
        git_branch=None,
        title=live.name,
        live=True,
        pid=live.pid,
        process_started_at=live.started_at,
        state=live.status,
        transcript_path=str(projects / folder / f"{live.session_id}.jsonl"),
        version=live.version,
        started_at=live.started_at,
        last_activity_at=live.started_at,
        tool_in_flight=None,
        subagents=[],
        health=swarm_health([], None, now),
        waiting_for=live.waiting_for,
        waiting_since=_waiting_since(live),
        mode=live.mode,
        tmux=live.tmux,
    )


def _waiting_since(live: LiveSession | None) -> float | None:
    """When a live session began waiting for the person; None when it does not wait."""
    return live.updated_at if live is not None and live.status == "waiting" else None


def waiting_for_person(sessions: Iterable[SessionInfo]) -> list[SessionInfo]:
    """The sessions waiting for the person, the longest waiting first; those whose pid file
    does not say since when come after, the least recently active first."""
    return sorted(
        (s for s in sessions if s.needs_person),
        key=lambda s: (
            s.waiting_since is None,
            s.waiting_since if s.waiting_since is not None else s.last_activity_at or 0.0,
            s.session_id,
        ),
    )


def _subagent_file(name: str) -> bool:
    """An `agent-<id>.jsonl` of a subagent, not of one of Claude Code's own helpers (those are
    not even read: a compaction helper's file repeats the whole conversation)."""
    match = _AGENT_FILE.match(name)
    return match is not None and not is_internal_agent(match.group(1))


def _agent_id(path: Path, facts: TranscriptFacts) -> str:
    match = _AGENT_FILE.match(path.name)
    if match:
        return match.group(1)
    return facts.agent_id or path.stem


def _load_meta(path: str) -> dict[str, Any]:
    try:
        data = json.loads(read_regular(path, MAX_META))
    except (OSError, ValueError):  # also a FIFO, a device or a file over MAX_META
        return {}
    return data if isinstance(data, dict) else {}


def _dirs(folder: Path) -> list[Path]:
    try:
        return [Path(e.path) for e in os.scandir(folder) if e.is_dir(follow_symlinks=False)]
    except OSError:
        return []


def _entries(folder: Path) -> list[os.DirEntry[str]]:
    try:
        return list(os.scandir(folder))
    except OSError:
        return []


def _is_file(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_file()
    except OSError:
        return False


def _mtime(entry: os.DirEntry[str]) -> float:
    try:
        return entry.stat().st_mtime
    except OSError:
        return 0.0
