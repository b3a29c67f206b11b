"""A bounded ring of recent looks, so a rule can tell a lasting condition from a moment's.

The app's sparklines keep their own history inside a widget; a headless watchdog has none, so
the engine keeps this one wherever it runs. A look keeps only what a rule reads of a past pass
(each running job's cores figures), never the pass's whole snapshot: sixty snapshots of ten
sessions of a hundred subagents each held tens of megabytes in the control room for the half
hour the ring takes to fill (bench/results/app.md, over hours).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from swarmdeck.probes.usage import Usage
    from swarmdeck.watchdog.scene import Scene


@dataclass(frozen=True)
class Look:
    """What a rule reads of one past pass."""

    taken_at: float
    usage: dict[int, Usage]
    """Each job's cores in use and threads at once then, by job id (those that had figures)."""


class History:
    """The last `size` looks, oldest first."""

    def __init__(self, size: int) -> None:
        self._looks: deque[Look] = deque(maxlen=max(1, size))

    def add(self, scene: Scene) -> None:
        usage = {job.id: job.usage for job in scene.snapshot.jobs if job.usage is not None}
        self._looks.append(Look(scene.taken_at, usage))

    def __iter__(self) -> Iterator[Look]:
        return iter(self._looks)

    def __len__(self) -> int:
        return len(self._looks)

    def since(self, moment: float) -> list[Look]:
        """The looks taken at or after `moment`, oldest first."""
        return [look for look in self._looks if look.taken_at >= moment]
