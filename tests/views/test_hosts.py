"""A host's figures as every face shows them: threads free never reads as a negative count."""

from __future__ import annotations

from swarmdeck.views.hosts import HostFigures, host_cells


def test_threads_free_reads_as_a_share_of_the_budget() -> None:
    assert host_cells(HostFigures(threads_free=12, heavy_threads=16))["threads"] == "12/16"


def test_an_overbooked_budget_reads_none_free_and_how_far_over() -> None:
    assert host_cells(HostFigures(threads_free=-8, heavy_threads=2))["threads"] == "0/2 (8 over)"


def test_unknown_figures_read_as_missing() -> None:
    assert host_cells(HostFigures(), missing="?")["threads"] == "?/?"
