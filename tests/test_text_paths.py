"""text_paths answers as PurePosixPath does, on every spelling of a path."""

from __future__ import annotations

from pathlib import PurePosixPath

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from swarmdeck.text_paths import below, is_within, joined, name_of, parent_of, tidy

EDGES = [
    "", ".", "/", "//", "///", "////a", "//a/b", "a", "a/", "a//b", "./a", "a/.", "a/./b/.",
    "/a/../b", "..", "../a", "/sys/fs/cgroup/memory/", "/sys//fs/./cgroup", " a /b ", "a/b/c",
    ".hidden", "a/.b.", "/.",
]
SPELLINGS = st.lists(st.sampled_from(["", ".", "..", "a", "b", "c.d", " ", "é"]), max_size=6).map(
    "/".join
) | st.sampled_from(EDGES)


def _check(path: str, other: str) -> None:
    pure, root = PurePosixPath(path), PurePosixPath(other)
    assert tidy(path) == str(pure)
    assert name_of(path) == pure.name
    assert parent_of(path) == str(pure.parent)
    assert joined(other, path) == str(root / path)
    inside = pure == root or root in pure.parents
    assert is_within(path, other) == inside
    if inside:
        assert below(path, other) == str(pure.relative_to(root))


@pytest.mark.parametrize("path", EDGES)
@pytest.mark.parametrize("other", ["/", "/sys/fs/cgroup", "a", ".", "//a", "", "/sys/fs/"])
def test_edge_spellings_read_as_pathlib_reads_them(path: str, other: str) -> None:
    _check(path, other)


@settings(max_examples=500, deadline=None)
@given(st.sampled_from(["", "/", "//", "///"]), SPELLINGS, st.sampled_from(["", "/", "//"]),
       SPELLINGS)
def test_generated_spellings_read_as_pathlib_reads_them(
    lead: str, path: str, other_lead: str, other: str
) -> None:
    _check(lead + path, other_lead + other)
