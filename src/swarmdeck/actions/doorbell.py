"""Waking queued runners the moment room is freed, instead of at their next poll.

Each queued runner keeps a FIFO of its own in a folder beside the state file and waits on it
(with select, beside its signal pipe); a runner that frees room (its job ended and its cage is
gone, or it left the queue) writes one byte into every FIFO there. The waiter opens its FIFO
for reading and writing, so it never sees an end of file while no one rings; a FIFO no process
reads any more (its runner was killed outright) refuses the ringer's open with ENXIO and is
removed. A missed ring costs no more than the poll it replaces: waiters still re-check now and
then.
"""

from __future__ import annotations

import errno
import os
import stat

FOLDER_SUFFIX = ".queue"
"""The folder of doorbells is the state file's name with this after it."""
PREFIX = "runner-"


def folder_of(db: str) -> str:
    return f"{db}{FOLDER_SUFFIX}"


class Doorbell:
    """A queued runner's FIFO, named by its pid and start ticks, open until `close`."""

    def __init__(self, db: str, pid: int, start_ticks: int) -> None:
        folder = folder_of(db)
        os.makedirs(folder, mode=0o700, exist_ok=True)
        name = f"{PREFIX}{pid}-{start_ticks}"
        self.path = os.path.join(folder, name)
        # Made under a name no ringer reads and opened before it is renamed into place: a FIFO
        # a ringer finds without a reader is a dead runner's, and is removed.
        hanging = os.path.join(folder, f".{name}")
        for path in (self.path, hanging):
            _remove_fifo(path)  # a leftover of this very runner identity cannot be another's
        os.mkfifo(hanging, 0o600)
        self.fd = os.open(hanging, os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC)
        os.rename(hanging, self.path)

    def fileno(self) -> int:
        return self.fd

    def drain(self) -> None:
        """Take every ring waiting in the FIFO: one look at the book answers them all."""
        try:
            while os.read(self.fd, 512):
                pass
        except BlockingIOError:
            pass

    def close(self) -> None:
        os.close(self.fd)
        _remove_fifo(self.path)


def _remove_fifo(path: str) -> None:
    """Remove `path` only if it is a FIFO: nothing else in the folder is ours to remove."""
    try:
        if stat.S_ISFIFO(os.lstat(path).st_mode):
            os.unlink(path)
    except FileNotFoundError:
        pass


def ring(db: str) -> int:
    """Wake every queued runner of this state file; how many were woken."""
    folder = folder_of(db)
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return 0
    woken = 0
    for name in names:
        if not name.startswith(PREFIX):
            continue
        path = os.path.join(folder, name)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOFOLLOW)
        except OSError as error:
            if error.errno == errno.ENXIO:
                _remove_fifo(path)  # no reader: its runner is gone
            continue
        try:
            if stat.S_ISFIFO(os.fstat(fd).st_mode):
                os.write(fd, b"\0")
                woken += 1
        except BlockingIOError:
            woken += 1  # full of rings not taken yet: it is awake already
        except OSError:
            # The reader went away between the open and the write: nothing to wake.
            pass
        finally:
            os.close(fd)
    return woken
