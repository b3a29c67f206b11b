"""The OOM standing of a running job's processes: raised while it runs, never lowered.

The kernel's OOM killer takes the process with the highest oom_score_adj first, the largest
among equals. A job starts at the standing of its booking (booking.decide_booking). Two things
raise it while it runs:

- its working set passes its booking: it may take what nobody booked for it, so it stands at
  booking.OOM_ADJ_OUTGROWN and a full slice kills it before any job that kept to its booking
  (issue 34: a drifting workload's second day lost a run that kept to its booking beside the
  one that outgrew it, all standing at 500);
- a job admitted on its cap books what its folder shows it will take (booking.lighter_booking),
  or any job books its working set once its runs show it has peaked (booking.settled_booking):
  it now stands where a prediction stands, killed first if the prediction was wrong.

A child forked afterwards inherits the standing.
"""

from __future__ import annotations

import contextlib
import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable


def raise_standing(members: Callable[[], list[int]], adj: int) -> None:
    """Raise each process `members` lists (a cage's) to `adj`, leaving any above it.

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
                    _raise(folder, adj)
    finally:
        for folder in folders.values():
            os.close(folder)


def _raise(folder: int, adj: int) -> None:
    fd = os.open("oom_score_adj", os.O_RDWR | os.O_CLOEXEC, dir_fd=folder)
    try:
        if int(os.read(fd, 16) or b"0") < adj:
            os.lseek(fd, 0, os.SEEK_SET)
            os.write(fd, str(adj).encode())
    finally:
        os.close(fd)
