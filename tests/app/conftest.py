"""What the control room's tests share: a memory slice of their own for the jobs they start."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from own_slice import slice_in_config


@pytest.fixture
def caged(isolated_home: Path) -> Iterator[Path]:
    """A memory slice of this test's own, 256M, in the config the app and its runners read."""
    with slice_in_config(isolated_home / "config.toml", prediction=None) as path:
        yield path
