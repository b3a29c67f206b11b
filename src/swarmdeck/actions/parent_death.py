"""The parent-death signal: a caged job gets SIGKILL when its runner dies, however it dies.

Linux sets it with `prctl(PR_SET_PDEATHSIG, signal)`, which the standard library does not
wrap, so it is called through `_ctypes`, the C half of ctypes. The `ctypes` package around it
builds about a hundred classes and imports struct when it loads, some 4 ms of every
`swarmdeck run` on Python 3.11, to reach one function of libc with integer arguments; this
module declares the one C type and the one function type that call needs, as ctypes itself
declares them (`c_int`, `CDLL._FuncPtr`).
"""

from __future__ import annotations

import _ctypes
import os

PR_SET_PDEATHSIG = 1


class _CInt(_ctypes._SimpleCData):
    """C's `int`: the type of prctl's result."""

    _type_ = "i"


class _LibcFunction(_ctypes.CFuncPtr):
    """A C function of the running process's libc, returning `int` and keeping errno."""

    _flags_ = _ctypes.FUNCFLAG_CDECL | _ctypes.FUNCFLAG_USE_ERRNO
    _restype_ = _CInt


class _Process:
    """The symbols already loaded into this process (dlopen(NULL)), libc's among them."""

    _handle = _ctypes.dlopen(None, os.RTLD_NOW)


_prctl = _LibcFunction(("prctl", _Process()))


def die_with_parent(signal_number: int) -> None:
    """Ask for `signal_number` when this process's parent thread ends.

    Raises OSError when the kernel refuses.
    """
    if _prctl(PR_SET_PDEATHSIG, signal_number, 0, 0, 0) != 0:
        code = _ctypes.get_errno()
        raise OSError(code, os.strerror(code))

