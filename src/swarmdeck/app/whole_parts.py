"""A line of parts (a host's figures, a legend's entries) that a narrow panel never cuts inside a
part: the parts wrap onto more lines whole, or those past the width are left out whole and an
ellipsis says so. Terminal text wrap and ellipsis both cut words ("· availabl…")."""

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
        line = Text()
        for index, part in enumerate(self.parts):
            joined = line.cell_len + len(self.separator) + part.cell_len if line else part.cell_len
            if line and joined > width:
                if not self.wrap:
                    line.append(MORE, style=self.style)
                    return [line] if line.cell_len <= width else [self._dropped(index, width)]
                lines.append(line)
                line = Text()
            if line:
                line.append(self.separator, style=str(part.style) or self.style)
            line.append_text(part)
        lines.append(line)
        return lines

    def _dropped(self, end: int, width: int) -> Text:
        """The first parts before `end` that fit in `width` with MORE after them."""
        for count in range(end - 1, 0, -1):
            line = Text(self.separator, style=self.style).join(self.parts[:count])
            line.append(MORE, style=self.style)
            if line.cell_len <= width:
                return line
        return self.parts[0].copy()

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[Text]:
        for line in self.lines(options.max_width):
            line.no_wrap = True
            line.overflow = "ellipsis"
            yield line

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        widest = max((part.cell_len for part in self.parts), default=0)
        return Measurement(min(widest, options.max_width), cell_len(str(self)) + self.indent)
