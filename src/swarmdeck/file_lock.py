"""Taking an exclusive file lock (flock) within a deadline.

The runner's admission turn, the slice owner record and a named lock's guard all hold a lock
for one short decision, and the kernel drops it when its holder dies. A waiter asks again after
short pauses instead of blocking in the kernel, so that a holder stuck for good costs it a
bounded wait and a clear line, never a freeze, and so that its pauses can listen for a stop.
"""

from __future__ import annotations

import fcntl
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable


def take_within(
    fd: int,
    wait: float,
    pause: Callable[[float], object] = time.sleep,
    first: float = 0.01,
    most: float = 0.01,
) -> bool:
    """Take an exclusive flock on `fd`; False when another holder kept it past `wait` seconds.

    Between tries it calls `pause` with a pause that doubles from `first` up to `most`; a
    `pause` that raises ends the wait with its exception.
    """
    deadline = time.monotonic() + wait
    pause_s = first
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            pass
        if time.monotonic() >= deadline:
            return False
        pause(pause_s)
        pause_s = min(pause_s * 2, most)
