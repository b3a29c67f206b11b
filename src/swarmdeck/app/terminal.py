"""Whether the terminal the control room draws on is still there.

A pane can close without SIGHUP reaching the app (started under `make run`, say, whose make dies
first); stdin is then hung up and Textual's input thread spins on empty reads, holding a core for
as long as nobody notices. The app checks on every probe round and leaves by itself.
"""

from __future__ import annotations

import os
import select
import sys

GONE = select.POLLHUP | select.POLLERR | select.POLLNVAL


def controlling_tty() -> int | None:
    """The descriptor of the terminal on stdin, or None when stdin is not a terminal."""
    stream = sys.__stdin__
    if stream is None:
        return None
    try:
        fd = stream.fileno()
    except (OSError, ValueError):
        return None
    return fd if os.isatty(fd) else None


def hung_up(fd: int) -> bool:
    """True once the other side of the terminal is gone (poll reports hang-up or a bad fd)."""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return any(flags & GONE for _, flags in poller.poll(0))
