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


class TimeLimit:
    """`with TimeLimit(seconds):` raises OutOfTime in the block once it has taken longer than
    `seconds` (main thread only; elsewhere the block runs without a limit)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._outer_left = 0.0
        self._started = 0.0
        self._previous: object = None
        self._armed = False

    def __enter__(self) -> None:
        self._outer_left, _interval = signal.getitimer(signal.ITIMER_REAL)
        if self._outer_left and self._outer_left <= self.seconds:
            return  # the outer limit ends first: it alone counts
        self._started = time.monotonic()
        try:
            self._previous = signal.signal(signal.SIGALRM, self._expire)
        except ValueError:
            # Not the main thread, where alone a handler can be set: no limit here. (Asked this
            # way rather than through threading, which the light hook would import for it.)
            return
        self._armed = True
        signal.setitimer(signal.ITIMER_REAL, self.seconds)

    def __exit__(self, *_exception: object) -> None:
        if not self._armed:
            return
        self._armed = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, self._previous)  # type: ignore[arg-type]
        if self._outer_left:
            left = self._outer_left - (time.monotonic() - self._started)
            signal.setitimer(signal.ITIMER_REAL, max(left, 0.001))

    def _expire(self, _signum: int, _frame: object) -> None:
        raise OutOfTime(f"took over {self.seconds:g} s")
