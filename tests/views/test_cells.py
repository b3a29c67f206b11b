"""Size cells: each byte count is formatted once, however many refreshes show it."""

from __future__ import annotations

import pytest

from swarmdeck.views import cells
from swarmdeck.views.cells import size_cell


def test_a_size_shown_at_every_refresh_is_formatted_once(monkeypatch: pytest.MonkeyPatch) -> None:
    formatted: list[int] = []
    real = cells.format_size

    def counting(n: int) -> str:
        formatted.append(n)
        return real(n)

    monkeypatch.setattr(cells, "format_size", counting)
    size_cell.cache_clear()
    try:
        assert [size_cell(3 * 2**30 + 12345) for _ in range(20)] == ["3G"] * 20
        assert size_cell(512 * 2**20) == "512M"
        assert formatted == [3 * 2**30 + 12345, 512 * 2**20]
    finally:
        size_cell.cache_clear()


def test_no_size_is_a_dash() -> None:
    assert size_cell(None) == "–"
