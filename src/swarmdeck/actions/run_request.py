"""What `swarmdeck run` was asked to do; a leaf, so runner and detach share it without a circle."""

from __future__ import annotations

from pathlib import Path

from swarmdeck.records import dataclass, field

STOP_GRACE = 5.0
"""Seconds a job's tree gets between SIGTERM and SIGKILL on timeout or runner stop."""


@dataclass(frozen=True)
class RunRequest:
    """What `swarmdeck run` was asked to do."""

    argv: list[str]
    cap: str | None = None
    label: str | None = None
    threads: int | None = None
    unbounded: bool = False
    wait: float | None = None
    """Seconds to queue for room; None: the config's memory.admission_wait."""
    timeout: float | None = None
    detach: bool = False
    cwd: Path = field(default_factory=Path.cwd)
    grace: float = STOP_GRACE
