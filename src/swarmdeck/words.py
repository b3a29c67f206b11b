"""Counts as a person writes them: "1 time", "2 times", "a tool call"; one home for the plural
rule every message, panel and detail view uses."""

from __future__ import annotations


def counted(count: int, noun: str, one_as: int | str = 1, plural: str | None = None) -> str:
    """`1 time`, `2 times`, `a tool call` (with `one_as="a"`), `2 processes` (with its
    `plural`): a count and its noun, plural past one."""
    if count == 1:
        return f"{one_as} {noun}"
    return f"{count} {plural or noun + 's'}"
