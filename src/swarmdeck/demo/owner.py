"""Who a demo scene's folder belongs to, written into the folder as the scene starts.

A scene removes everything it made when it stops; a scene killed before it could (SIGKILL, a
closed terminal, a crash) leaves its folder, the processes whose environment points into it and
its slices. The owner file lets a later `swarmdeck demo` tell such a leftover from a scene that
is still running: it names the scene's process (pid and start ticks, so a reused pid is not
taken for it) and the slices it caps its jobs and its peer's in.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from swarmdeck.probes.procs import ProcessIdentity, own_identity

OWNER_FILE = "scene-owner"
PREFIX = "swarmdeck-demo-"
"""How a scene's temporary folder is named; a leftover is looked for only among these."""


@dataclass(frozen=True)
class SceneOwner:
    """The process a scene folder belongs to and the slices it made (empty when uncaged)."""

    process: ProcessIdentity
    slices: tuple[str, ...]


def write_owner(root: Path, slices: tuple[str, ...]) -> None:
    """Record this process as the owner of the scene in `root`, with its slices."""
    me = own_identity()
    lines = [f"{me.pid} {me.start_ticks}", *slices]
    (root / OWNER_FILE).write_text("\n".join(lines) + "\n")


def read_owner(root: Path) -> SceneOwner | None:
    """The owner recorded in `root`, or None when there is none that can be read."""
    try:
        first, *slices = (root / OWNER_FILE).read_text().splitlines()
        pid, ticks = (int(part) for part in first.split())
    except (OSError, ValueError):
        return None
    return SceneOwner(ProcessIdentity(pid, ticks), tuple(name for name in slices if name))


def abandoned_scenes(folder: Path) -> list[tuple[Path, SceneOwner]]:
    """This user's scene folders in `folder` whose owner is gone, with what they recorded.

    A folder without a readable owner file, a link, or one of another user is never taken."""
    found = []
    try:
        entries = sorted(folder.iterdir())
    except OSError:
        return []
    for entry in entries:
        if not entry.name.startswith(PREFIX):
            continue
        try:
            info = entry.lstat()
        except OSError:
            continue
        if not entry.is_dir() or entry.is_symlink() or info.st_uid != os.geteuid():
            continue
        owner = read_owner(entry)
        if owner is not None and not owner.process.is_alive():
            found.append((entry, owner))
    return found


__all__ = ["OWNER_FILE", "PREFIX", "SceneOwner", "abandoned_scenes", "read_owner", "write_owner"]
