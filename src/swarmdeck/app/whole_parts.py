"""A line of parts (a host's figures, a legend's entries) that a narrow panel never cuts inside a
part: the parts wrap onto more lines whole, or those past the width are left out whole and an
ellipsis says so. Terminal text wrap and ellipsis both cut words ("· availabl…"). Only a part
wider than the whole width, alone on its line, wraps by words itself: cut, a refusal would hide
what it names and what to do.

A part may be laid out as taking more space than it does now (`space`): a legend's entry whose
figure goes from "0B" to "1.23G" then keeps its line, so a refresh that changes figures
repaints them and never lays the screen out again for a line that came or went."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions
from rich.measure import Measurement
from rich.text import Text

MORE = " …"
"""Ends a line whose trailing parts were left out."""


@dataclass(frozen=True)
class WholeParts:
    """Parts joined by `separator`, laid out by the width they are drawn in."""

    parts: tuple[Text, ...]
    separator: str = "  "
    wrap: bool = True
    """Wrap onto more lines; otherwise one line of the parts that fit, then MORE."""
    style: str = ""
    """The style of a separator (and of MORE) before a part of no style of its own."""
    space: tuple[int, ...] = ()
    """Cells each part is laid out as taking, where it may take more than it does now (its
    figure's widest text); a part longer than its space takes what it is."""
    indent: int = 0
    """Cells left blank before the parts (a legend under its bar), as long as the parts take no
    more lines so than from the edge; where they would, they start at the edge instead."""

    def __str__(self) -> str:
        return self.separator.join(part.plain for part in self.parts)

    def lines(self, width: int) -> list[Text]:
        """The parts laid out in `width` cells, after the indent where that costs no line; a
        part wider than that alone on its line."""
        if self.indent:
            flush = self._laid_out(width)
            indented = self._laid_out(width - self.indent)
            if len(indented) <= len(flush) and width > self.indent:
                return [Text(" " * self.indent) + line for line in indented]
            return flush
        return self._laid_out(width)

    def _laid_out(self, width: int) -> list[Text]:
        """The parts from the edge of `width` cells."""
        lines: list[Text] = []
        line, taken = Text(), 0
        for index, part in enumerate(self.parts):
            size = self._size(index)
            joined = taken + len(self.separator) + size if line else size
            if line and joined > width:
                if not self.wrap:
                    line.append(MORE, style=self.style)
                    return [line] if line.cell_len <= width else [self._dropped(index, width)]
                lines.append(line)
                line, joined = Text(), size
            if line:
                line.append(self.separator, style=str(part.style) or self.style)
            line.append_text(part)
            taken = joined
        lines.append(line)
        return lines

    def _size(self, index: int) -> int:
        """The cells part `index` is laid out as taking: its space, or more if it is longer."""
        space = self.space[index] if index < len(self.space) else 0
        return max(self.parts[index].cell_len, space)

    def _dropped(self, end: int, width: int) -> Text:
        """The first parts before `end` that fit in `width` with MORE after them."""
        for count in range(end - 1, 0, -1):
            line = Text(self.separator, style=self.style).join(self.parts[:count])
            line.append(MORE, style=self.style)
            if line.cell_len <= width:
                return line
        return self.parts[0].copy()

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[Text]:
        width = options.max_width
        for line in self.lines(width):
            if self.wrap and line.cell_len > width:
                # A part wider than the panel alone on its line (a refusal naming two paths):
                # cut, it would hide what it names and what to do, so it wraps by words.
                yield from line.wrap(console, width, overflow="fold")
                continue
            line.no_wrap = True
            line.overflow = "ellipsis"
            yield line

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        widest = max((part.cell_len for part in self.parts), default=0)
        return Measurement(min(widest, options.max_width), cell_len(str(self)) + self.indent)
