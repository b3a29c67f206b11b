"""A time limit for the slow parts of a hook, so its answer comes before Claude Code gives up.

Claude Code drops a hook's output when the hook overruns its timeout, and for PreToolUse it
then falls back to the normal flow anyway; better to stop early, say "not read" and exit 0.
The limit is a SIGALRM timer, so it also cuts a `git` call, a probe or a regex that hangs (the
regex engine checks for signals). Limits nest: an inner one never outlives the outer one, and the
outer one keeps counting once the inner ends.
"""

from __future__ import annotations

import signal
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import TypeVar

    T = TypeVar("T")

REMINDER_BUDGET = 7.0
"""Seconds for a PreToolUse answer (`hooks install` gives those hooks 10)."""
SESSION_START_BUDGET = 15.0
"""Seconds for a SessionStart answer (`hooks install` gives it 20)."""
OTHER_BUDGET = 4.0
"""Seconds for reading the input and answering any other event (`hooks install` gives 5 or more)."""
RECORD_BUDGET = 2.0
"""Seconds for recording the call once answered: answer and record stay inside the timeout."""


def answer_budget(event: str) -> float:
    """Seconds this event's answer may take."""
    if event == "SessionStart":
        return SESSION_START_BUDGET
    if event == "PreToolUse":
        return REMINDER_BUDGET
    return OTHER_BUDGET


class OutOfTime(Exception):
    """The hook's work ran past its budget."""


def within(seconds: float, work: Callable[[], T]) -> T:
    """Run `work`, raising OutOfTime if it takes longer than `seconds` (main thread only)."""

    def expire(_signum: int, _frame: object) -> None:
        raise OutOfTime(f"took over {seconds:g} s")

    outer_left, _interval = signal.getitimer(signal.ITIMER_REAL)
    if outer_left and outer_left <= seconds:
        return work()
    started = time.monotonic()
    try:
        previous = signal.signal(signal.SIGALRM, expire)
    except ValueError:
        # Not the main thread, where alone a handler can be set: no limit here. (Asked this
        # way rather than through threading, which the light hook would import for it.)
        return work()
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return work()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer_left:
            left = outer_left - (time.monotonic() - started)
            signal.setitimer(signal.ITIMER_REAL, max(left, 0.001))
