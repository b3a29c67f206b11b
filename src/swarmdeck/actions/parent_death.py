"""The parent-death signal: a caged job gets SIGKILL when its runner dies, however it dies.

Linux sets it with `prctl(PR_SET_PDEATHSIG, signal)`, which the standard library does not
wrap; it is called through ctypes, from the libc already loaded into the process.
"""

from __future__ import annotations

import ctypes
import os

PR_SET_PDEATHSIG = 1

_libc = ctypes.CDLL(None, use_errno=True)


def die_with_parent(signal_number: int) -> None:
    """Ask for `signal_number` when this process's parent thread ends.

    Raises OSError when the kernel refuses.
    """
    if _libc.prctl(PR_SET_PDEATHSIG, signal_number, 0, 0, 0) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))
