"""Text from outside is shown with its control characters as escapes, its styles kept."""

from __future__ import annotations

from rich.text import Text

from swarmdeck.printable import printable, printable_cell, printable_lines, printable_text


def test_printable_text_is_left_as_it_is() -> None:
    label = "pytest -n 8 · ünïcode ✓"
    assert printable(label) is label


def test_every_control_character_becomes_its_escape() -> None:
    assert printable("two\nlines\x1b[31mred\ttab\rcr\x00\x7f\x9b") == (
        "two ⏎ lines\\x1b[31mred\\ttab\\rcr\\x00\\x7f\\x9b"
    )


def test_a_command_of_several_lines_reads_as_lines_not_as_escapes() -> None:
    """A heredoc or a `set -e` script an agent ran: a person reads `⏎` between its lines, not
    a literal backslash-n."""
    assert printable("set -e\ncd build\nmake -j8") == "set -e ⏎ cd build ⏎ make -j8"


def test_the_line_and_paragraph_separators_become_escapes_too() -> None:
    assert printable("a\u2028b\u2029c") == "a\\u2028b\\u2029c"


def test_printable_lines_keeps_the_newlines_and_escapes_the_rest() -> None:
    assert printable_lines("ok\n\x1b[2Jcleared\n") == "ok\n\\x1b[2Jcleared\n"


def test_a_styled_text_keeps_each_style_on_the_characters_it_covered() -> None:
    text = Text.assemble(("a\x1bb", "bold"), ("c\nd", "red"))
    shown = printable_text(text)
    assert shown.plain == "a\\x1bbc ⏎ d"
    assert [(shown.plain[s.start:s.end], s.style) for s in shown.spans] == [
        ("a\\x1bb", "bold"), ("c ⏎ d", "red")
    ]


def test_a_cell_of_either_kind_is_made_printable() -> None:
    assert printable_cell("x\ny") == "x ⏎ y"
    assert isinstance(printable_cell(Text("x\ny")), Text)
