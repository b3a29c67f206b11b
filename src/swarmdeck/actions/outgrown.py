"""A job grown past its booking is the first the kernel kills when the slice fills.

The kernel's OOM killer takes the process with the highest oom_score_adj first, the largest
among equals. Jobs booked on a prediction all stand at 500, so among them the largest went,
even one that kept to its booking while a smaller one grew past its own and filled the slice
(issue 34: a drifting workload's second day lost a run that kept to its booking beside the one
that outgrew it). The runner gives every process of its job's cage the standing of a job that
may take what nobody booked for it (booking.OOM_ADJ_OUTGROWN) the first time the job's working
set passes its booking; a child forked afterwards inherits it. A standing is only raised, never
lowered.
"""

from __future__ import annotations

import contextlib
import os
from typing import TYPE_CHECKING

from swarmdeck.actions.booking import OOM_ADJ_OUTGROWN

if TYPE_CHECKING:
    from collections.abc import Callable


def stand_outgrown(members: Callable[[], list[int]]) -> None:
    """Raise each process `members` lists (a cage's) to OOM_ADJ_OUTGROWN.

    Every listed process's /proc folder is opened first and the cage is then read again: an
    open folder stays bound to the process it was opened for (if that one ends and its number
    is given to another, writes through it fail), so a write goes only through a folder whose
    process was still in the cage after it was opened. One that ended meanwhile, or refuses, is
    passed over."""
    folders: dict[int, int] = {}
    try:
        for pid in members():
            try:
                folders[pid] = os.open(f"/proc/{pid}", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            except OSError:
                continue
        still = set(members())
        for pid, folder in folders.items():
            # One that ended meanwhile, or is not ours to change, keeps the standing it had.
            if pid in still:
                with contextlib.suppress(OSError, ValueError):
                    _raise_standing(folder)
    finally:
        for folder in folders.values():
            os.close(folder)


def _raise_standing(folder: int) -> None:
    fd = os.open("oom_score_adj", os.O_RDWR | os.O_CLOEXEC, dir_fd=folder)
    try:
        if int(os.read(fd, 16) or b"0") < OOM_ADJ_OUTGROWN:
            os.lseek(fd, 0, os.SEEK_SET)
            os.write(fd, str(OOM_ADJ_OUTGROWN).encode())
    finally:
        os.close(fd)
