"""Draw the README's first picture: the control room on the demo scene, saved as a Textual SVG.

Run by `make pictures`. The scene is the one `swarmdeck demo` shows, so the picture is the app
as a new user first sees it; it is removed again when the picture is taken. Its pids, times and
user are this machine's, so the picture differs from run to run; the README's other pictures
(the approve modal among them) are the snapshot tests' on fixed data, copied by `make snapshots`.
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

from swarmdeck.app.main import SwarmdeckApp
from swarmdeck.config import load_config
from swarmdeck.demo.scene import Scene, SceneSettings
from swarmdeck.snapshot import Snapshot

OUT = Path(__file__).resolve().parent / "pictures"
SIZE = (140, 44)


def _full(snapshot: Snapshot | None) -> bool:
    """The scene has shown its parts: live sessions with subagents, a 250, a queued job."""
    if snapshot is None:
        return False
    codes = {job.exit_code for job in snapshot.jobs}
    states = {job.state for job in snapshot.jobs}
    agents = sum(len(session.subagents) for session in snapshot.sessions)
    return 250 in codes and "queued" in states and agents >= 3 and bool(snapshot.peers)


async def draw(scene: Scene) -> list[Path]:
    assert scene.store is not None
    app = SwarmdeckApp(load_config(), scene.store)
    async with app.run_test(size=SIZE) as pilot:
        deadline = time.monotonic() + 90
        while not _full(app.snapshot) and time.monotonic() < deadline:
            await asyncio.sleep(0.25)
        await asyncio.sleep(1.5)
        await pilot.pause()
        OUT.mkdir(parents=True, exist_ok=True)
        drawn = [Path(app.save_screenshot("demo.svg", str(OUT)))]
        await pilot.press("q")
    return drawn


def main() -> int:
    scene = Scene(SceneSettings(step=0.5), say=lambda line: print(line, file=sys.stderr))
    try:
        scene.start()
        drawn = asyncio.run(draw(scene))
    finally:
        scene.stop()
    for path in drawn:
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
