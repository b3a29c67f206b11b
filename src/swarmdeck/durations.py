"""Spans of time: their short texts, shared by the panels, `status`, the hooks and the peer
cache, and the one rule for a span a flag may give (`--wait`, `--timeout`, `--estimate-wall`).

Kept free of rich and textual so the hook path can use it, and of argparse so a caged run's
quick reading of its flags can too.
"""

from __future__ import annotations

NONE = "–"
MAX_SECONDS = 366 * 24 * 3600.0
"""The longest span a flag may give (a year): more than any job or wait, and far below what
sleeps, timers and the ledger's numbers can hold, where an infinity or 1e400 would overflow."""
_INFINITY = float("inf")


def finite(number: float) -> bool:
    """`math.isfinite`, without importing math: a shared library whose loading every caged run
    would pay at its start. NaN compares false on both sides."""
    return -_INFINITY < number < _INFINITY


def whole_milliseconds(seconds: float) -> int:
    """`seconds` rounded up to whole milliseconds (`math.ceil(seconds * 1000)`), as a poll's
    timeout takes it: rounded down, a wait would end just before its deadline."""
    return -int(-seconds * 1000 // 1)


def runtime_text(seconds: float | None) -> str:
    """A runtime to the second: 42s, 7m05s, 3h12m; a dash when there is none."""
    if seconds is None or not finite(seconds):
        return NONE
    whole = max(0, int(seconds))
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m"


def running_runtime_text(seconds: float | None) -> str:
    """A runtime still growing, to the minute: <1m, 7m, 3h12m; a dash when there is none.

    The Jobs panel shows it for running jobs: to the second, every running row would change at
    every refresh and be drawn again, for a figure a person reads to the minute anyway.
    """
    if seconds is None or not finite(seconds):
        return NONE
    whole = max(0, int(seconds))
    if whole < 60:
        return "<1m"
    if whole < 3600:
        return f"{whole // 60}m"
    return runtime_text(whole)


def age_text(seconds: float) -> str:
    """How long ago, in the largest whole unit: 42s, 7m, 3h, 2d; a dash for no number."""
    if not finite(seconds):
        return NONE
    seconds = max(0.0, seconds)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit}"
    return f"{int(seconds)}s"


def seconds_problem(seconds: float, *, zero_ok: bool = True) -> str | None:
    """What is wrong with `seconds` as a span a flag gives, said after the flag and its value
    ("--wait nan is not a number of seconds: …"); None when it is one: a number from 0 (above
    0 unless `zero_ok`) to MAX_SECONDS."""
    if seconds != seconds:  # NaN, the one number unequal to itself
        return "is not a number of seconds: give one like 600"
    if seconds < 0:
        return "is below 0: give 0 or more seconds"
    if seconds == 0 and not zero_ok:
        return "is no time at all: give more than 0 seconds"
    if seconds > MAX_SECONDS:
        return (
            f"is over a year ({MAX_SECONDS:.0f} seconds), the longest span swarmdeck takes:"
            " give fewer seconds"
        )
    return None


def _seconds(text: str, *, zero_ok: bool) -> float:
    try:
        seconds = float(text)
    except ValueError:
        seconds = float("nan")
    problem = seconds_problem(seconds, zero_ok=zero_ok)
    if problem is not None:
        raise ValueError(f"{text or repr(text)} {problem}")
    return seconds


def seconds_or_zero(text: str) -> float:
    """The seconds a flag such as `--wait 600` gives, 0 allowed; ValueError saying what is
    wrong (in the words of `seconds_problem`) for any other text."""
    return _seconds(text, zero_ok=True)


def seconds_above_zero(text: str) -> float:
    """The seconds a flag such as `--timeout 1800` gives, above 0; ValueError saying what is
    wrong for any other text."""
    return _seconds(text, zero_ok=False)
