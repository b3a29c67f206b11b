"""The real Claude Code tier: skipped, in one line, where the pinned CLI is not installed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from claude_rig import Rig, missing_reason


@pytest.fixture(scope="session")
def claude_cli() -> None:
    reason = missing_reason()
    if reason is not None:
        pytest.skip(reason)


@pytest.fixture
def rig(claude_cli: None, isolated_home: Path) -> Iterator[Rig]:
    made = Rig(isolated_home)
    made.start()
    try:
        yield made
    finally:
        made.stop()
