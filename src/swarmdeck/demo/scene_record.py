"""What a demo scene made, written into its folder as it makes it: the proof its removal needs.

A scene removes everything it made when it stops; a scene killed before it could (SIGKILL, a
closed terminal, a crash) leaves its folder, the processes it started and its slices. The owner
file lets a later `swarmdeck demo` tell such a leftover from a scene that is still running (the
scene's process: pid and start ticks, so a reused pid is not taken for it), and says what the
scene made, each as it was when made: the folder and every cgroup by device and inode (a path
that now names another cgroup or folder is not the scene's), the systemd slice units it caps in,
and the token every process it starts carries in its environment (SCENE_VARIABLE). A file in the
form older demos wrote, naming only a pid and slice names, proves nothing and is left alone.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

from swarmdeck.probes.procs import ProcessIdentity
from swarmdeck.regular_files import read_regular, replace_private

OWNER_FILE = "scene-owner"
PREFIX = "swarmdeck-demo-"
"""How a scene's temporary folder is named; a leftover is looked for only among these."""
SCENE_VARIABLE = "SWARMDECK_DEMO_SCENE"
"""The environment variable holding the scene's token in every process the scene starts."""
MAX_OWNER_BYTES = 64 * 1024


@dataclass(frozen=True)
class MadeThing:
    """A folder or cgroup as it was when the scene made it."""

    path: str
    device: int
    inode: int

    @classmethod
    def of(cls, path: Path | str) -> MadeThing:
        """The thing at `path` now (OSError when there is none)."""
        info = os.lstat(path)
        return cls(str(path), info.st_dev, info.st_ino)

    def is_there(self) -> bool:
        """Whether `path` still names what was made (not a link, not a later one of the name)."""
        try:
            info = os.lstat(self.path)
        except OSError:
            return False
        return (info.st_dev, info.st_ino) == (self.device, self.inode)


@dataclass(frozen=True)
class SceneOwner:
    """The process a scene folder belongs to and what the scene made."""

    process: ProcessIdentity
    token: str
    folder: MadeThing
    cgroups: tuple[MadeThing, ...] = ()
    units: tuple[str, ...] = ()
    """systemd slice units the scene's jobs were capped in (systemd makes their cgroups)."""

    @property
    def ledgers(self) -> tuple[str, ...]:
        """The state databases of the scene and of its peer: a slice whose owner record names
        another ledger was never the scene's."""
        root = self.folder.path
        return (f"{root}/state/state.db", f"{root}/peer/state/state.db")


def write_owner(owner: SceneOwner) -> None:
    """Record `owner` in its folder, whole (one rename) and readable by this user alone."""
    data = {
        "pid": owner.process.pid,
        "start_ticks": owner.process.start_ticks,
        "token": owner.token,
        "folder": asdict(owner.folder),
        "cgroups": [asdict(made) for made in owner.cgroups],
        "units": list(owner.units),
    }
    replace_private(Path(owner.folder.path) / OWNER_FILE, json.dumps(data).encode())


def read_owner(root: Path) -> SceneOwner | None:
    """The owner recorded in `root`, or None when there is none in this form that can be read."""
    try:
        data = json.loads(read_regular(root / OWNER_FILE, MAX_OWNER_BYTES))
        folder = MadeThing(str(root), int(data["folder"]["device"]), int(data["folder"]["inode"]))
        cgroups = tuple(
            MadeThing(str(made["path"]), int(made["device"]), int(made["inode"]))
            for made in data["cgroups"]
        )
        process = ProcessIdentity(int(data["pid"]), int(data["start_ticks"]))
        token, units = data["token"], tuple(data["units"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not isinstance(token, str) or len(token) < 32 or not all(isinstance(u, str) for u in units):
        return None
    return SceneOwner(process, token, folder, cgroups, units)


def abandoned_scenes(folder: Path) -> list[tuple[Path, SceneOwner]]:
    """This user's scene folders in `folder` whose owner is gone, with what they recorded.

    A folder without a readable owner file, a link, one of another user, or one that is not
    the folder its owner file names (by device and inode) is never taken."""
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
        if owner is not None and owner.folder.is_there() and not owner.process.is_alive():
            found.append((entry, owner))
    return found


__all__ = [
    "OWNER_FILE", "PREFIX", "SCENE_VARIABLE", "MadeThing", "SceneOwner", "abandoned_scenes",
    "read_owner", "write_owner",
]
