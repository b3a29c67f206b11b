"""A line of parts is never cut inside a part: it wraps whole parts onto more lines, or leaves
out the trailing ones whole and ends in an ellipsis."""

from __future__ import annotations

from rich.text import Text

from swarmdeck.app.whole_parts import WholeParts

PARTS = tuple(Text(part) for part in ("64 cores", "load 41.50", "threads free 32/56"))


def plain(lines: list[Text]) -> list[str]:
    return [line.plain for line in lines]


def test_parts_that_fit_stay_on_one_line() -> None:
    assert plain(WholeParts(PARTS, " · ").lines(80)) == [
        "64 cores · load 41.50 · threads free 32/56"
    ]


def test_wrapping_moves_a_whole_part_to_the_next_line() -> None:
    assert plain(WholeParts(PARTS, " · ").lines(30)) == [
        "64 cores · load 41.50", "threads free 32/56"
    ]


def test_one_line_leaves_out_whole_parts_and_says_so() -> None:
    assert plain(WholeParts(PARTS, " · ", wrap=False).lines(30)) == ["64 cores · load 41.50 …"]
    assert plain(WholeParts(PARTS, " · ", wrap=False).lines(21)) == ["64 cores …"]
