"""The slices a demo scene caps its jobs in: only cgroups it makes, and only those taken down.

`swarmdeck demo --slice NAME` once took any cgroup it was named: another ledger's slice (whose
running job it SIGKILLed on quitting, then removed the slice), the machine's default slice, the
hierarchy's root with pid 1 in it. Now the scene refuses, before it starts anything, a name
whose cgroup (or its peer's beside it) is the hierarchy's root, the default slice or inside it,
one that exists already, or one inside another ledger's slice; it makes its slices itself and
records each (demo/scene_record.py); and at the end it takes down only a cgroup it recorded,
stopping only the processes it started (demo/strays.py) and leaving a cgroup that still holds
others.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterable
from pathlib import Path

from swarmdeck.actions.cage import CageError, remove_cgroup
from swarmdeck.actions.cage.scope import user_flag
from swarmdeck.actions.kill import PinnedProcess
from swarmdeck.demo.scene_record import MadeThing
from swarmdeck.demo.strays import kill_and_wait
from swarmdeck.errors import UsageError
from swarmdeck.probes.cgroups import (
    DEFAULT_SCOPE_SLICE,
    DEFAULT_SLICE_NAME,
    SCOPE,
    cgroup_pids,
    configured_path,
    read_hierarchies,
    scope_slice_path,
    slice_sites,
)
from swarmdeck.probes.slice_owner import read_owner

DEFAULT_NAMES = (DEFAULT_SLICE_NAME, DEFAULT_SCOPE_SLICE)

Belongs = Callable[[int], PinnedProcess | None]
"""A pid pinned when it is a process of the scene's own, else None (strays.scene_process)."""


class SliceRefused(UsageError):
    """`--slice` names a cgroup the scene did not make, or one it must never make (exit 251)."""


def peer_slice_name(name: str) -> str:
    """The peer's slice beside the scene's: NAME-peer, or NAMEpeer.slice for a systemd unit."""
    return f"{name.removesuffix('.slice')}peer.slice" if name.endswith(".slice") else f"{name}-peer"


def slice_refusal(name: str, existing: bool = True) -> str | None:
    """Why the scene may not make `name`, or its peer's slice beside it, for its jobs; None
    when it may. The name is read as every hierarchy would read it for the root and the
    default slice, and as the backends that could cage here would for the rest. With
    `existing` False, a cgroup that exists is let pass unless it is the root, the default
    slice or inside another ledger's slice."""
    hierarchy = read_hierarchies()
    roots = [root for root in (hierarchy.v1_memory, hierarchy.v2) if root]
    for setting in (name, peer_slice_name(name)):
        named = [configured_path(setting, root) for root in roots]
        if setting.endswith(".slice"):
            named += [scope_slice_path(setting, root) for root in roots]
        for path in named:
            problem = _machine_wide(path, roots)
            if problem:
                return f"--slice {name}: {problem}"
        for site in slice_sites(setting):
            if not site.available or site.path is None:
                continue
            if site.backend == SCOPE and not setting.endswith(".slice"):
                continue  # the scene names its systemd slice units itself
            problem = _machine_wide(site.path, roots) or _taken(site.path, roots, existing)
            if problem:
                return f"--slice {name}: {problem}"
    return None


def _machine_wide(path: str, roots: list[str]) -> str:
    """Why `path` is the machine's: the hierarchy's root, or the default slice or inside it."""
    if path in roots:
        return (
            f"{path} is the root of the cgroup hierarchy, which every process on the machine is"
            " in: name a new cgroup for the demo's jobs"
        )
    root = _root_of(path, roots)
    parts = path[len(root) + 1:].split("/") if root else []
    if any(part in DEFAULT_NAMES for part in parts):
        return (
            f"{path} is the machine's default slice or lies inside it: name a new cgroup for the"
            " demo's jobs"
        )
    return ""


def _taken(path: str, roots: list[str], existing: bool) -> str:
    """Why `path` is someone else's: it exists (when `existing`), or lies in a ledger's slice."""
    if existing and os.path.lexists(path):
        return (
            f"{path} already exists: the demo caps its jobs only in a slice it makes and removes"
            " itself, so name one that does not exist"
        )
    for ancestor in _ancestors(path, _root_of(path, roots)):
        owner = read_owner(ancestor)
        if owner is not None:
            return f"{path} lies inside {ancestor}, the slice of the ledger {owner.ledger}"
    return ""


def _root_of(path: str, roots: list[str]) -> str | None:
    return next((root for root in roots if path.startswith(f"{root}/")), None)


def _ancestors(path: str, root: str | None) -> list[str]:
    """The cgroups between `root` and `path`, both left out."""
    found = []
    parent = os.path.dirname(path)
    while root and parent.startswith(f"{root}/"):
        found.append(parent)
        parent = os.path.dirname(parent)
    return found


def make_cgroup(path: str) -> MadeThing:
    """Make the cgroup `path`, which must not exist yet, and say what was made."""
    try:
        os.mkdir(path)
    except FileExistsError:
        raise SliceRefused(
            f"{path} appeared while the demo started: it caps its jobs only in a slice it"
            " makes itself"
        ) from None
    except OSError as error:
        raise CageError(f"cannot create slice {path}: {error.strerror or error}") from error
    return MadeThing.of(path)


def take_down(made: MadeThing, ledgers: Iterable[str], belongs: Belongs) -> str:
    """Stop the scene's processes in the cgroup the scene made, and remove it with the cages
    beneath it; "" once it is gone, else the line saying why it is left: it is no longer the
    cgroup made, no owner record names the scene's ledgers, or processes the scene did not
    start are in it."""
    if not os.path.lexists(made.path):
        return ""
    if not made.is_there():
        return f"{made.path} is left: it is no longer the cgroup the scene made"
    problem = _not_the_scenes(made.path, ledgers)
    if problem:
        return problem
    top = Path(made.path)
    inner = sorted((p for p in top.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts))
    for cgroup in [*inner, top]:
        strangers = _stop_members(cgroup, belongs)
        if strangers:
            shown = ", ".join(map(str, strangers[:5]))
            return f"{made.path} is left: processes the scene did not start are in it ({shown})"
        try:
            remove_cgroup(str(cgroup))
        except CageError as error:
            return f"{made.path} is left: {error}"
    return ""


def stop_unit(unit: str, path: str, ledgers: Iterable[str], belongs: Belongs) -> str:
    """Stop the systemd slice unit the scene's jobs were capped in, when its slice is the
    scene's ledger's and holds nothing but the scene's processes; else the line saying why not.
    """
    if not os.path.lexists(path):
        return ""
    problem = _not_the_scenes(path, ledgers)
    if problem:
        return problem
    cgroups = [Path(path), *(p for p in Path(path).rglob("*") if p.is_dir())]
    strangers = [pid for cgroup in cgroups for pid in cgroup_pids(cgroup) if not _is(pid, belongs)]
    if strangers:
        shown = ", ".join(map(str, strangers[:5]))
        return f"{unit} is left: processes the scene did not start are in it ({shown})"
    subprocess.run(
        ["systemctl", *user_flag(), "stop", unit],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False,
    )
    return ""


def _not_the_scenes(path: str, ledgers: Iterable[str]) -> str:
    """Why the slice at `path` is not the scene's by its owner record (actions/cage/slice_claim.py),
    which the scene wrote as it made the slice: there is none, or it names another ledger than
    the scene's and its peer's; "" when it is the scene's."""
    owner = read_owner(path)
    if owner is None:
        return f"{path} is left: no record says the scene made it"
    mine = {os.path.realpath(ledger) for ledger in ledgers}
    if owner.ledger not in mine:
        return f"{path} is left: it belongs to the ledger {owner.ledger}"
    return ""


def _is(pid: int, belongs: Belongs) -> bool:
    pinned = belongs(pid)
    if pinned is None:
        return False
    pinned.close()
    return True


def _stop_members(cgroup: Path, belongs: Belongs) -> list[int]:
    """SIGKILL the scene's processes in `cgroup`; the pids of the others in it."""
    members = cgroup_pids(cgroup)
    pinned = {pid: belongs(pid) for pid in members}
    ours = [process for process in pinned.values() if process is not None]
    try:
        kill_and_wait(ours)
    finally:
        for process in ours:
            process.close()
    return [pid for pid in cgroup_pids(cgroup) if pinned.get(pid) is None]


__all__ = ["SliceRefused", "make_cgroup", "peer_slice_name", "slice_refusal", "stop_unit",
           "take_down"]
