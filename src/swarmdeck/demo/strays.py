"""The processes a demo scene started, known by the token they carry, and the end of them.

Everything a scene starts inherits its environment: the scene's folder in SWARMDECK_STATE_DIR
and the like, and a token of its own in SCENE_VARIABLE, which nothing else has. A process is
the scene's only when its environment holds both, so a process that merely names the folder (a
shell someone opened there, a forged owner file's "scene") is never signalled; each one is
pinned (pid and start ticks, through a pidfd) before its environment is read, and signalled
through that pin. A folder is removed only while it is the one the scene made and no live
process works in it.
"""

from __future__ import annotations

import os
import shutil
import signal
import time
from pathlib import Path
from typing import TYPE_CHECKING

from swarmdeck.actions.kill import PinnedProcess
from swarmdeck.demo.scene_record import SCENE_VARIABLE, MadeThing
from swarmdeck.probes.procs import environment, identity, pids, process_links

if TYPE_CHECKING:
    from collections.abc import Iterable

GRACE = 10.0
"""Seconds the scene's processes get after SIGTERM (runners take their cages down) before KILL."""


def scene_process(pid: int, root: Path | str, token: str) -> PinnedProcess | None:
    """`pid` pinned, when it is a live process of the scene in `root` with `token`; else None.

    The environment is read between taking the process's identity and pinning it: a pin
    whose start ticks still match proves the pid named that one process all along."""
    ident = identity(pid)
    if ident is None or pid == os.getpid():
        return None
    entries = environment(pid).split(b"\0")
    inside = os.fsencode(f"{root}/")
    if f"{SCENE_VARIABLE}={token}".encode() not in entries or not any(
        entry.partition(b"=")[2].startswith(inside) for entry in entries
    ):
        return None
    pinned = PinnedProcess(ident)
    return pinned if pinned.valid else None


def scene_processes(root: Path | str, token: str) -> list[PinnedProcess]:
    """Every live process of the scene in `root`, pinned."""
    found = (scene_process(pid, root, token) for pid in pids())
    return [pinned for pinned in found if pinned is not None]


def stop_strays(root: Path | str, token: str, grace: float = GRACE) -> None:
    """End what the scene's processes started on their own, in sessions of their own (a job
    moved to the peer is started detached there): TERM first, so runners take their cages
    down; KILL whatever is left after `grace` seconds."""
    strays = scene_processes(root, token)
    try:
        for stray in strays:
            stray.send(signal.SIGTERM)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and not all(stray.exited() for stray in strays):
            time.sleep(0.05)
        kill_and_wait(stray for stray in strays if not stray.exited())
    finally:
        for stray in strays:
            stray.close()


def kill_and_wait(pinned: Iterable[PinnedProcess], wait: float = 2.0) -> None:
    """SIGKILL each pinned process and wait up to `wait` seconds for all to be gone."""
    held = list(pinned)
    for process in held:
        process.send(signal.SIGKILL)
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline and not all(process.exited() for process in held):
        time.sleep(0.02)


def workers_in(folder: Path | str) -> list[int]:
    """Live processes (this one aside) whose working folder, root, program or an open file
    lies in `folder`."""
    inside = f"{folder}/"
    found = []
    for pid in pids():
        if pid == os.getpid():
            continue
        try:
            links = process_links(pid)
        except OSError:
            continue  # gone meanwhile, or another user's (whose links this user cannot read)
        if any(link == str(folder) or link.startswith(inside) for link in links):
            found.append(pid)
    return found


def remove_folder(made: MadeThing) -> str:
    """Remove the folder the scene made; "" once it is gone, else the line saying why it is
    left (no longer the folder made, or a live process works in it)."""
    if not os.path.lexists(made.path):
        return ""
    if not made.is_there():
        return f"{made.path} is left: it is no longer the folder the scene made"
    working = workers_in(made.path)
    if working:
        shown = ", ".join(map(str, working[:5]))
        return f"{made.path} is left: processes the scene did not start use it ({shown})"
    shutil.rmtree(made.path, ignore_errors=True)
    return ""


__all__ = ["kill_and_wait", "remove_folder", "scene_process", "scene_processes", "stop_strays",
           "workers_in"]
