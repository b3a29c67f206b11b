"""Who holds which workspace lock and who owns which work directory: the read side.

Agents that share a checkout trample each other's builds; a lock file per workspace says who
is in it. A lock names its holder by (pid, start ticks), so a holder that died, or whose pid
now belongs to another process, is seen as stale rather than trusted for ever. A file that
cannot be parsed is stale too, with a warning, never a crash.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from swarmdeck.breaks import broken
from swarmdeck.paths import state_dir
from swarmdeck.probes import procs

FREE = "free"
HELD = "held"
STALE = "stale"

OWNER_FILE = ".swarmdeck-owner"
_SLUG = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True)
class LockHolder:
    """What a lock file says about the process holding it."""

    path: str
    pid: int
    start_ticks: int
    session: str
    command: str
    since: float

    @property
    def identity(self) -> procs.ProcessIdentity:
        return procs.ProcessIdentity(self.pid, self.start_ticks)

    def describe(self) -> str:
        """The line a waiting caller prints: who holds it, since when."""
        since = time.strftime("%H:%M:%S", time.localtime(self.since))
        return (
            f"held by session {self.session}, process {self.pid}"
            f" ({self.command or 'no command'}) since {since}"
        )

    def to_text(self) -> str:
        return json.dumps(
            {
                "path": self.path,
                "pid": self.pid,
                "start_ticks": self.start_ticks,
                "session": self.session,
                "command": self.command,
                "since": self.since,
            }
        )


@dataclass(frozen=True)
class LockState:
    """One workspace lock as it stands now: free, held (holder alive) or stale (and why)."""

    lock_file: Path
    state: str
    holder: LockHolder | None = None
    reason: str = ""

    @property
    def path(self) -> str:
        return self.holder.path if self.holder else ""

    def describe(self) -> str:
        """One line for `lock show` and the Locks panel."""
        if self.state == FREE:
            return "free"
        if self.state == HELD and self.holder:
            held = self.holder.describe()
            return f"{held} ({self.reason})" if self.reason else held
        if self.holder:
            return f"stale ({self.reason}); was {self.holder.describe()}"
        return f"stale ({self.reason})"

    def to_json(self) -> dict[str, Any]:
        holder = self.holder
        return {
            "kind": "lock",
            "path": self.path,
            "lock_file": str(self.lock_file),
            "state": self.state,
            "reason": self.reason,
            "pid": holder.pid if holder else None,
            "start_ticks": holder.start_ticks if holder else None,
            "session": holder.session if holder else "",
            "command": holder.command if holder else "",
            "since": holder.since if holder else None,
        }


def locks_dir() -> Path:
    """Where lock files live: state_dir()/locks/."""
    return Path(state_dir()) / "locks"


def lock_file_for(path: Path | str, directory: Path | None = None) -> Path:
    """The lock file of a workspace, keyed by its resolved path (readable name plus a hash)."""
    resolved = str(Path(path).resolve())
    digest = hashlib.sha256(resolved.encode()).hexdigest()[:16]
    slug = _SLUG.sub("-", Path(resolved).name)[:40] or "root"
    return (directory or locks_dir()) / f"{slug}-{digest}.lock"


def _json_object(text: str, what: str) -> dict[str, Any]:
    """The JSON object a record file holds; ValueError naming `what` when it holds none."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"not {what} ({error.msg})") from error
    if not isinstance(data, dict):
        raise ValueError(f"not {what}")
    return data


def parse_lock(text: str) -> LockHolder:
    """A lock file's holder; ValueError when the text is not a complete lock record."""
    data = _json_object(text, "a lock record")
    pid, ticks, since = data.get("pid"), data.get("start_ticks"), data.get("since")
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        raise ValueError(f"bad pid {pid!r}")
    if not isinstance(ticks, int) or isinstance(ticks, bool) or ticks < 0:
        raise ValueError(f"bad start ticks {ticks!r}")
    if not isinstance(since, int | float) or isinstance(since, bool):
        raise ValueError(f"bad since {since!r}")
    texts = {key: data.get(key, "") for key in ("path", "session", "command")}
    if not all(isinstance(value, str) for value in texts.values()):
        raise ValueError("path, session and command must be text")
    return LockHolder(
        path=texts["path"],
        pid=pid,
        start_ticks=ticks,
        session=texts["session"],
        command=texts["command"],
        since=float(since),
    )


UNREADABLE = -1
"""Start ticks of a pid that exists but whose process entry this user may not read."""


def judge(holder: LockHolder, current_start_ticks: int | None) -> tuple[str, str]:
    """Held or stale, from the start ticks the holder's pid has now (None: no such pid;
    UNREADABLE: it exists, but belongs to another user and the kernel hides it from us).

    The pid alone proves nothing: pids are reused, so only an exact match of field 22 keeps
    the lock held. A pid that exists but cannot be read is taken as the holder: treating it
    as gone would let a second caller into a workspace that is still in use.
    """
    if current_start_ticks is None:
        return STALE, f"process {holder.pid} is gone"
    if current_start_ticks == UNREADABLE:
        return HELD, f"process {holder.pid} is another user's; its start cannot be checked"
    if current_start_ticks != holder.start_ticks and not broken("no-pid-start-check"):
        return STALE, (
            f"pid {holder.pid} now belongs to another process"
            f" (started at tick {current_start_ticks}, the holder at {holder.start_ticks})"
        )
    return HELD, ""


def current_start_ticks(pid: int) -> int | None:
    """Field 22 of the pid's stat now; None when no such process exists; UNREADABLE when it
    exists but the kernel will not show it to us (hidepid, another user's process)."""
    ticks = procs.start_ticks(pid)
    if ticks is not None or pid <= 0:
        return ticks
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        return UNREADABLE
    # Signal 0 reached it, so it exists: it started between the two looks, or its entry is
    # hidden from us for another reason. Either way it is not gone.
    ticks = procs.start_ticks(pid)
    return UNREADABLE if ticks is None else ticks


def read_lock_file(lock_file: Path) -> LockState:
    """A lock file's state now; missing → free, unparsable → stale with the reason."""
    try:
        text = lock_file.read_text(errors="replace")
    except FileNotFoundError:
        return LockState(lock_file, FREE)
    except OSError as error:
        return LockState(lock_file, STALE, reason=f"lock file unreadable: {error}")
    try:
        holder = parse_lock(text)
    except ValueError as error:
        return LockState(lock_file, STALE, reason=f"lock file is garbage: {error}")
    state, reason = judge(holder, current_start_ticks(holder.pid))
    return LockState(lock_file, state, holder, reason)


def read_lock(path: Path | str, directory: Path | None = None) -> LockState:
    """The lock of one workspace."""
    return read_lock_file(lock_file_for(path, directory))


def all_locks(directory: Path | None = None) -> list[LockState]:
    """Every lock file in the locks folder, held and stale alike, by path."""
    folder = directory or locks_dir()
    try:
        files = sorted(folder.glob("*.lock"))
    except OSError:
        return []
    states = [read_lock_file(file) for file in files]
    return [state for state in states if state.state != FREE]


@dataclass(frozen=True)
class DirOwner:
    """The owner file of a work directory: which session made it, when, and what for."""

    session: str
    created_at: float
    purpose: str

    def to_text(self) -> str:
        return json.dumps(
            {"session": self.session, "created_at": self.created_at, "purpose": self.purpose}
        )


def parse_owner(text: str) -> DirOwner:
    """An owner file's content; ValueError when it is not a complete owner record."""
    data = _json_object(text, "an owner record")
    session, created, purpose = data.get("session"), data.get("created_at"), data.get("purpose")
    if not isinstance(session, str) or not session:
        raise ValueError(f"bad session {session!r}")
    if not isinstance(created, int | float) or isinstance(created, bool):
        raise ValueError(f"bad created_at {created!r}")
    if not isinstance(purpose, str):
        raise ValueError(f"bad purpose {purpose!r}")
    return DirOwner(session, float(created), purpose)


@dataclass(frozen=True)
class OwnedDirectory:
    """A directory under the work root with its owner (None: no or unreadable owner file).

    `used_by` are the processes seen using it; `unchecked` those that could not be looked at
    (another user's, when not root), any of which might be using it too.
    """

    directory: Path
    owner: DirOwner | None
    problem: str = ""
    used_by: tuple[int, ...] = ()
    unchecked: tuple[int, ...] = ()

    def describe(self) -> str:
        """One line for the Locks panel: owner and purpose, or why there is none; who uses it."""
        owner = self.owner
        text = (
            f"owned by session {owner.session} ({owner.purpose or 'no purpose'})"
            if owner
            else self.problem
        )
        if self.used_by:
            text += "; in use by process " + ", ".join(map(str, self.used_by))
        return text

    def to_json(self) -> dict[str, Any]:
        """A row of the snapshot's `locks` list, with the same keys as a lock's row."""
        owner = self.owner
        return {
            "kind": "owner",
            "path": str(self.directory),
            "lock_file": "",
            "state": "in use" if self.used_by else ("owned" if owner else "no owner"),
            "reason": self.problem,
            "pid": self.used_by[0] if self.used_by else None,
            "start_ticks": None,
            "session": owner.session if owner else "",
            "command": owner.purpose if owner else "",
            "since": owner.created_at if owner else None,
        }


def read_owner(directory: Path) -> tuple[DirOwner | None, str]:
    """A directory's owner and, when there is none to trust, why."""
    try:
        text = (directory / OWNER_FILE).read_text(errors="replace")
    except FileNotFoundError:
        return None, "no owner file"
    except OSError as error:
        return None, f"owner file unreadable: {error}"
    try:
        return parse_owner(text), ""
    except ValueError as error:
        return None, f"owner file is garbage: {error}"


def _inside(target: str, directories: list[str]) -> str | None:
    for directory in directories:
        if target == directory or target.startswith(directory + os.sep):
            return directory
    return None


@dataclass
class Users:
    """Which processes use which directories, and the pids that could not be looked at."""

    by_directory: dict[str, set[int]] = field(default_factory=dict)
    unreadable: set[int] = field(default_factory=set)


def processes_using(directories: list[Path], *, mapped: bool = False) -> Users:
    """Processes whose cwd, root, executable or an open file lies in one of `directories`;
    with `mapped`, also a file mapped into memory (a shared library loaded from there, whose
    descriptor is closed), at the cost of reading every process's maps.

    A pid whose links cannot be read (another user's process, when not root) is listed as
    unreadable: it might be using any of them.
    """
    wanted = [str(Path(d).resolve()) for d in directories]
    users = Users({d: set() for d in wanted})
    for pid in procs.pids():
        try:
            targets = procs.process_links(pid)
            if mapped:
                targets += procs.mapped_files(pid)
        except PermissionError:
            users.unreadable.add(pid)
            continue
        except OSError:
            continue  # the process ended while we looked; it uses nothing now
        for target in targets:
            hit = _inside(target.removesuffix(" (deleted)"), wanted)
            if hit is not None:
                users.by_directory[hit].add(pid)
    return users


def owned_directories(work_root: Path) -> list[OwnedDirectory]:
    """Every directory directly under the work root, with its owner and the pids using it."""
    try:
        children = sorted(p for p in Path(work_root).iterdir() if p.is_dir() and not p.is_symlink())
    except OSError:
        return []
    return _with_users(children)


def owned_directory(directory: Path, *, mapped: bool = False) -> OwnedDirectory:
    """One directory with its owner and users, looked up afresh (see processes_using)."""
    return _with_users([Path(directory)], mapped=mapped)[0]


def _with_users(directories: list[Path], *, mapped: bool = False) -> list[OwnedDirectory]:
    users = processes_using(directories, mapped=mapped)
    unchecked = tuple(sorted(users.unreadable))
    result = []
    for directory in directories:
        owner, problem = read_owner(directory)
        used = tuple(sorted(users.by_directory.get(str(directory.resolve()), set())))
        result.append(OwnedDirectory(directory, owner, problem, used, unchecked))
    return result


def lock_rows(work_root: str | Path = "") -> list[LockState | OwnedDirectory]:
    """The snapshot's `locks` list: every lock file, then (when a work root is configured) every
    directory under it with its owner. The owner scan reads every link of every process on the
    host, so it runs only when the config names a work root."""
    rows: list[LockState | OwnedDirectory] = list(all_locks())
    if work_root:
        rows.extend(owned_directories(Path(work_root)))
    return rows
