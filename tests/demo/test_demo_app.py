"""The real control room on the demo scene under Textual's Pilot: its panels fill with the
scene's jobs and sessions, `q` quits, and stopping the scene then leaves nothing behind."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest

from swarmdeck.app.jobs import JobsPanel
from swarmdeck.app.keyed_table import KeyedTable
from swarmdeck.app.main import SwarmdeckApp
from swarmdeck.config import load_config
from swarmdeck.demo.scene import Scene, SceneSettings
from swarmdeck.snapshot import Snapshot

pytestmark = pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning")
"""A transport collected after its loop closed is a traceback on the screen: an error here."""


def _ready(snapshot: Snapshot | None) -> bool:
    return (
        snapshot is not None
        and len([s for s in snapshot.sessions if s.live]) == 3
        and len(snapshot.jobs) == 5
        and any(peer.state == "read" for peer in snapshot.peers)
    )


async def test_the_app_shows_the_scene_and_quitting_leaves_nothing(
    tmp_path: Path, demo_slice: str | None
) -> None:
    before = {name: os.environ.get(name) for name in ("SWARMDECK_STATE_DIR", "CLAUDE_CONFIG_DIR")}
    settings = SceneSettings(step=0.5, slice_name=demo_slice)
    scene = Scene(settings, root=tmp_path / "scene", say=lambda line: None)
    try:
        scene.start()
        assert scene.store is not None
        app = SwarmdeckApp(load_config(), scene.store)
        async with app.run_test(size=(160, 50)) as pilot:
            deadline = time.monotonic() + 60
            while not _ready(app.snapshot) and time.monotonic() < deadline:
                await asyncio.sleep(0.2)
            assert _ready(app.snapshot)
            await pilot.pause()
            table = app.query_one(JobsPanel).query_one(KeyedTable)
            assert table.row_count == 5
            await pilot.press("q")
            await pilot.pause()
        assert app.return_code == 0
    finally:
        scene.stop()
    assert not (tmp_path / "scene").exists()
    assert scene.slice_path is None or not scene.slice_path.exists()
    for job in scene.jobs:
        assert job.process.poll() is not None
    for session in scene.sessions:
        assert session.process is not None and session.process.poll() is not None
    assert {name: os.environ.get(name) for name in before} == before
