"""A migrate pane's line for one peer reads as a person writes: its GPUs as a count, "no GPU"
when it has none, and nothing about GPUs when its reading does not say."""

from __future__ import annotations

from swarmdeck.actions.migration import MigrationOption


def _option(gpus: str) -> MigrationOption:
    return MigrationOption("loopback", True, 2 << 30, 2, gpus, "", ("true",), "/")


def test_a_peer_without_gpus_says_no_gpu_and_an_unknown_count_says_nothing() -> None:
    assert _option("0").summary() == "loopback: room 2G, 2 threads free, no GPU — fits now"
    assert _option("—").summary() == "loopback: room 2G, 2 threads free — fits now"
    assert _option("2").summary() == "loopback: room 2G, 2 threads free, GPUs 2 — fits now"
