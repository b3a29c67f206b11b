"""What `swarmdeck run` was asked to do; a leaf, so runner and detach share it without a circle."""

from __future__ import annotations

from pathlib import Path

from swarmdeck.config import MAX_SIZE
from swarmdeck.errors import UsageError
from swarmdeck.records import dataclass, field
from swarmdeck.sizes import format_size

STOP_GRACE = 5.0
"""Seconds a job's tree gets between SIGTERM and SIGKILL on timeout or runner stop."""


def checked_cap(text: str, cap: int) -> int:
    """`cap`, the bytes `--cap text` came to on its host, if it is a cap a job can be given:
    above 0, and at most MAX_SIZE, which the ledger's integers hold; else UsageError (251)."""
    if cap <= 0:
        raise UsageError(f"--cap {text} is no memory at all: give a size like 512M or 8G")
    if cap > MAX_SIZE:
        raise UsageError(
            f"--cap {text} is over {format_size(MAX_SIZE)}, the most a size may be: "
            "give a size like 512M or 8G"
        )
    return cap


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
