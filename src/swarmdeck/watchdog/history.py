"""A bounded ring of recent scenes, so a rule can tell a lasting condition from a moment's.

The app's sparklines keep their own history inside a widget; a headless watchdog has none, so
the engine keeps this one wherever it runs.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from swarmdeck.watchdog.scene import Scene


class History:
    """The last `size` scenes, oldest first."""

    def __init__(self, size: int) -> None:
        self._scenes: deque[Scene] = deque(maxlen=max(1, size))

    def add(self, scene: Scene) -> None:
        self._scenes.append(scene)

    def __iter__(self) -> Iterator[Scene]:
        return iter(self._scenes)

    def __len__(self) -> int:
        return len(self._scenes)

    def since(self, moment: float) -> list[Scene]:
        """The scenes taken at or after `moment`, oldest first."""
        return [scene for scene in self._scenes if scene.taken_at >= moment]
