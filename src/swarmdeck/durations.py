"""Short texts for spans of time, shared by the panels, `status`, the hooks and the peer cache.

Kept free of rich and textual so the hook path can use it.
"""

from __future__ import annotations

NONE = "–"


def runtime_text(seconds: float | None) -> str:
    """A runtime to the second: 42s, 7m05s, 3h12m; a dash when there is none."""
    if seconds is None:
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
    if seconds is None:
        return NONE
    whole = max(0, int(seconds))
    if whole < 60:
        return "<1m"
    if whole < 3600:
        return f"{whole // 60}m"
    return runtime_text(whole)


def age_text(seconds: float) -> str:
    """How long ago, in the largest whole unit: 42s, 7m, 3h, 2d."""
    seconds = max(0.0, seconds)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit}"
    return f"{int(seconds)}s"
