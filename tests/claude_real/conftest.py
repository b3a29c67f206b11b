"""The real Claude Code tier. Without the pinned CLI its tests are not even collected, and
test_version.py alone says so: one skipped test, one line."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from claude_rig import Rig, missing_reason

if missing_reason() is not None:
    collect_ignore_glob = ["test_[!v]*.py"]


@pytest.fixture
def rig(isolated_home: Path) -> Iterator[Rig]:
    made = Rig(isolated_home)
    made.start()
    try:
        yield made
    finally:
        made.stop()
