"""Claim work directories for a session and clean up only what is yours and unused.

Scratch copies and build trees left behind by finished subagents fill disks; deleting them
blindly destroys a colleague's work. Each directory under the work root carries an owner
file; cleanup removes a directory only when the caller's session owns it and no process has
it as its cwd or holds a file in it, and lists every other directory with the reason it stays.
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from swarmdeck.errors import RefusedError
from swarmdeck.probes import locks
from swarmdeck.probes.locks import OWNER_FILE, DirOwner, OwnedDirectory


@dataclass(frozen=True)
class Kept:
    """A directory cleanup left in place, and why."""

    directory: Path
    reason: str


@dataclass
class CleanupReport:
    """What one cleanup removed and what it kept."""

    removed: list[Path] = field(default_factory=list)
    kept: list[Kept] = field(default_factory=list)
    unchecked: tuple[int, ...] = ()


def claim_directory(directory: Path | str, *, session: str, purpose: str) -> DirOwner:
    """Create `directory` (if needed) and write its owner file naming `session`.

    A directory another session already owns is refused, never re-owned; so is one whose
    owner file cannot be read, since its owner may still want it. The owner file is linked
    into place, which fails when one exists, so of two sessions claiming at once one wins.
    """
    target = Path(directory)
    target.mkdir(parents=True, exist_ok=True)
    mine = DirOwner(session, time.time(), purpose)
    tmp = target / f".{OWNER_FILE}.{os.getpid()}.tmp"
    tmp.write_text(mine.to_text() + "\n")
    try:
        os.link(tmp, target / OWNER_FILE)
        return mine
    except FileExistsError:
        owner, problem = locks.read_owner(target)
    finally:
        tmp.unlink(missing_ok=True)
    if owner is None:
        raise RefusedError(f"{target}: {problem}; not claimed")
    if owner.session != session:
        raise RefusedError(f"{target}: owned by session {owner.session} ({owner.purpose})")
    return owner


def keep_reason(entry: OwnedDirectory, session: str) -> str | None:
    """Why a directory must stay, or None when the caller may remove it."""
    if entry.owner is None:
        return f"no owner to check ({entry.problem})"
    if entry.owner.session != session:
        return f"owned by session {entry.owner.session} ({entry.owner.purpose or 'no purpose'})"
    if entry.used_by:
        return "in use by process " + ", ".join(str(pid) for pid in entry.used_by)
    return None


def cleanup(work_root: Path | str, *, session: str) -> CleanupReport:
    """Remove the caller's unused directories under `work_root`; list the others with reasons.

    Each directory's users are looked up again just before it is removed, so one that a
    process entered after the first scan stays. Processes whose links cannot be read (more
    privileged than the caller: another user's, or PID 1 in a container) are reported in
    `unchecked` rather than blocking: every machine has some, so blocking on them would make
    cleanup impossible for anyone but the most privileged user.
    """
    report = CleanupReport()
    entries = locks.owned_directories(Path(work_root))
    report.unchecked = entries[0].unchecked if entries else ()
    for entry in entries:
        reason = keep_reason(entry, session)
        if reason is None:
            reason = keep_reason(locks.owned_directory(entry.directory, mapped=True), session)
        if reason is None:
            reason = _remove(entry.directory)
        if reason is not None:
            report.kept.append(Kept(entry.directory, reason))
        else:
            report.removed.append(entry.directory)
    return report


def _remove(directory: Path) -> str | None:
    """Delete a directory tree; None when done, else why it (or part of it) is still there."""
    try:
        shutil.rmtree(directory)
    except OSError as error:
        return f"could not remove: {error}"
    return None
