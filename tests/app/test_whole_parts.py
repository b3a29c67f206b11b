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


def test_parts_keep_their_lines_when_a_figure_changes_length() -> None:
    """Each part laid out as taking its space: a figure from 0B to 1.23G moves no part."""
    def parts(figure: str) -> WholeParts:
        texts = (f"used outside {figure}", f"slice used {figure}", f"room {figure}")
        return WholeParts(tuple(Text(text) for text in texts), space=(18, 16, 10))

    short, long = parts("0B").lines(36), parts("1.23G").lines(36)
    assert plain(short) == ["used outside 0B  slice used 0B", "room 0B"]
    assert plain(long) == ["used outside 1.23G  slice used 1.23G", "room 1.23G"]


def test_a_part_longer_than_its_space_is_laid_out_as_long_as_it_is() -> None:
    assert plain(WholeParts(PARTS, " · ", space=(1, 1, 1)).lines(30)) == [
        "64 cores · load 41.50", "threads free 32/56"
    ]
