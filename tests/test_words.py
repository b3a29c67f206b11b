"""Counts read as a person writes them."""

from __future__ import annotations

from swarmdeck.words import counted


def test_one_is_singular_and_every_other_count_plural() -> None:
    assert counted(1, "time") == "1 time"
    assert counted(0, "time") == "0 times"
    assert counted(3, "subagent") == "3 subagents"
    assert counted(1, "tool call", "a") == "a tool call"
    assert counted(2, "more process", plural="more processes") == "2 more processes"
