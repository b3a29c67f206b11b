"""A time limit for the slow parts of a hook, so its answer comes before Claude Code gives up.

Claude Code drops a hook's output when the hook overruns its timeout, and for PreToolUse it
then falls back to the normal flow anyway; better to stop early, say "not read" and exit 0.
The limit is a SIGALRM timer, so it also cuts a `git` call or a probe that hangs.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

REMINDER_BUDGET = 7.0
"""Seconds for a PreToolUse answer (`hooks install` gives those hooks 10)."""
SESSION_START_BUDGET = 15.0
"""Seconds for a SessionStart answer (`hooks install` gives it 20)."""


class OutOfTime(Exception):
    """The hook's work ran past its budget."""


def within(seconds: float, work: Callable[[], T]) -> T:
    """Run `work`, raising OutOfTime if it takes longer than `seconds` (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        return work()

    def expire(_signum: int, _frame: object) -> None:
        raise OutOfTime(f"took over {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return work()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
