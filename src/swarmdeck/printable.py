"""Text from outside (labels, commands, folders, transcripts, what agents wrote) made safe to
show: every control character written as its escape (`\\x1b`, `\\t`), a newline as ` ⏎ `, so
a command of several lines (a heredoc, a `set -e` script) reads as its lines, not as `\\n`.
Kept free of heavy imports: `swarmdeck alerts` and `kills` print plain lines through it.

Such text reaches a person's terminal in a table cell or a line of the control room: an escape
sequence in it would be obeyed by the terminal (colours, a moved cursor, a retitled window),
and a newline would split a table's row. The JSON output keeps the exact text: JSON escapes
it itself.
"""

from __future__ import annotations

from itertools import accumulate
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.text import Text

_NAMED = {"\n": " ⏎ ", "\r": "\\r", "\t": "\\t"}


def _escape(code: int) -> str:
    char = chr(code)
    if char in _NAMED:
        return _NAMED[char]
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


_CONTROLS = [*range(0x00, 0x20), *range(0x7F, 0xA0), 0x2028, 0x2029]
"""C0 and C1 controls, DEL, and the line and paragraph separators, which break lines too."""
_ESCAPES = {code: _escape(code) for code in _CONTROLS}
_ESCAPES_BUT_NEWLINE = {code: text for code, text in _ESCAPES.items() if code != ord("\n")}


def printable(text: str) -> str:
    """`text` with every control character as its escape and each newline as ` ⏎ `: one line."""
    return text if text.isprintable() else text.translate(_ESCAPES)


def printable_lines(text: str) -> str:
    """`text` with every control character but the newline as its escape: the lines of a
    job's output, of a fact that lists several things."""
    return text if text.isprintable() else text.translate(_ESCAPES_BUT_NEWLINE)


def printable_text(text: Text) -> Text:
    """A styled text made printable as `printable` makes a string, its styles kept on the
    characters they covered."""
    from rich.text import Span

    plain = text.plain
    if plain.isprintable():
        return text
    pieces = [printable(char) for char in plain]
    starts = list(accumulate((len(piece) for piece in pieces), initial=0))
    shown = text.blank_copy("".join(pieces))
    end = len(plain)
    shown.spans = [
        Span(starts[min(span.start, end)], starts[min(span.end, end)], span.style)
        for span in text.spans
    ]
    return shown


def printable_cell(cell: str | Text) -> str | Text:
    """A table cell made printable, whichever kind it is."""
    return printable(cell) if isinstance(cell, str) else printable_text(cell)
