"""One way for tests to wait: on a condition, up to a deadline, never for a fixed time.

The deadline is generous because the suite runs on loaded machines; a condition that holds
returns at once, so a fast machine pays nothing for it. A machine many times slower (the
emulated cgroup v2 guest, tests_v2/guest/inside.sh) gives more through TEST_WAIT_SECONDS.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

DEADLINE = float(os.environ.get("TEST_WAIT_SECONDS", "30"))
"""Seconds a condition is given before the test fails."""
STEP = 0.02
"""Seconds between two looks."""


def _failure(timeout: float, seen: Callable[[], object] | None) -> AssertionError:
    return AssertionError(
        f"condition not reached in {timeout:g} s" + (f"; seen: {seen()}" if seen else "")
    )


def wait_for(
    predicate: Callable[[], object],
    timeout: float = DEADLINE,
    seen: Callable[[], object] | None = None,
) -> None:
    """Return once predicate() holds; fail after `timeout` seconds saying what `seen` shows."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise _failure(timeout, seen)
        time.sleep(STEP)


async def pilot_wait_for(
    pilot: Any,
    predicate: Callable[[], object],
    timeout: float = DEADLINE,
    seen: Callable[[], object] | None = None,
) -> None:
    """`wait_for` under Textual's Pilot: the app keeps running between looks."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise _failure(timeout, seen)
        await pilot.pause(0.05)
