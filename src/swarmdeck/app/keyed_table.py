"""A table kept in step with a keyed row set cell by cell, so the cursor stays on its row, and
narrowed to its width: the trailing columns give way first and a cut cell ends in `…`; Right
and Left scroll the columns a column at a time, those that gave way coming in at the right
while the fixed leading ones stay, as a process table wider than its screen scrolls.

A changed cell is rendered again alone. Textual's `DataTable.update_cell` keys every render it
caches by one update counter, so a runtime ticking in one row renders every visible cell again;
on a table of twenty running jobs that was most of what the control room cost. This table is a
`ScrollView` drawn line by line (`render_line`, as toolong's `LogLines`) from its own cache of
cell renders keyed by row, column, width and style: a sync repaints only the regions of the
cells that changed, and a line is joined from cached cells. Public Textual API only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

from rich.padding import Padding
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.cache import LRUCache
from textual.geometry import Region, Size
from textual.message import Message
from textual.reactive import var
from textual.scroll_view import ScrollView
from textual.strip import Strip

from swarmdeck.views.cells import Cell

NARROWEST = 6
"""A column's cells are cut no narrower than this; past that the column gives way whole."""

PADDING = 1
"""Blank cells before a cell's text."""

GAP = 2 * PADDING
"""Blank cells between two columns' texts, unless a table is given its own `gap`."""

HEADER = 1
"""Lines the column labels take at the top; they stay while the rows scroll."""

RENDERS_PER_PLACE = 2
"""Cell renders the cache keeps for each cell place on screen: the render of the row shown
there, and of one that just left it (a row scrolled or moved away, which may come back). Sized
by the screen, not by the hours the table runs: rows that come and go leave renders behind,
which the cache lets go as new ones come."""


def fitted(cell: Cell) -> Text:
    """A cell as one line that ends in `…` when its column is narrower than it."""
    text = Text(cell) if isinstance(cell, str) else cell.copy()
    text.no_wrap = True
    text.overflow = "ellipsis"
    return text


YIELDING_FLOOR = 12
"""A yielding column (a label, a state) is cut to no narrower than this before others go."""


def fitted_widths(
    widths: Sequence[int], space: int, narrowest: int, yielding: Mapping[int, int] | None = None,
    kept: int = -1,
) -> list[int]:
    """How wide each column is drawn (padding included) for all to fit in `space` cells.

    First the yielding columns (index → the narrowest it may be cut to), in their order, are
    cut as far as the leading columns need to fit whole: all of them where cutting the yielding
    ones makes that much space, else as many as it makes space for, and at least those through
    index `kept`. Then the leading columns
    (what a person reads first) are drawn whole, then one cut to what is left (its cells end in
    `…`), then none (0: that column gives way; the table scrolls to it, the detail shows it)."""
    widths = list(widths)
    yielding = yielding or {}
    spare = sum(max(0, widths[index] - floor) for index, floor in yielding.items())
    last = len(widths) - 1
    while last > kept and sum(widths[:last + 1]) - spare > space:
        last -= 1
    excess = sum(widths[:last + 1]) - space
    for index, floor in yielding.items():
        if excess <= 0:
            break
        cut = min(excess, max(0, widths[index] - floor))
        widths[index] -= cut
        excess -= cut
    drawn: list[int] = []
    for width in widths:
        left = space - sum(drawn)
        drawn.append(width if width <= left else (left if left >= narrowest else 0))
        if drawn[-1] < width:
            space = sum(drawn)
    return drawn


@dataclass(frozen=True, slots=True)
class ShownColumn:
    """A column as the table draws it now."""

    key: str
    label: str
    width: int
    """Cells of text it shows (padding excluded); 0: it gave way."""
    whole: int
    """Cells its label or widest cell takes whole."""


class KeyedTable(ScrollView, can_focus=True):
    """Rows are identified by a stable key (job id, pid, session id) across refreshes.

    `sync` removes rows whose key is gone, replaces only the cells that changed and places new
    rows where they belong; the cursor stays on its row's key and the scroll where it was.
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "select_cursor", "Open", show=False),
        Binding("up", "cursor_up", "Cursor up", show=False),
        Binding("down", "cursor_down", "Cursor down", show=False),
        Binding("right", "cursor_right", "More columns", show=False),
        Binding("left", "cursor_left", "Columns back", show=False),
        Binding("pageup", "page_up", "Page up", show=False),
        Binding("pagedown", "page_down", "Page down", show=False),
        Binding("home,ctrl+home", "first_row", "First row", show=False),
        Binding("end,ctrl+end", "last_row", "Last row", show=False),
    ]

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "keyed-table--header",
        "keyed-table--even-row",
        "keyed-table--odd-row",
        "keyed-table--cursor",
    }
    """The looks of the labels' line, the zebra stripes and the row under the cursor (focused
    or not), in the colours Textual's DataTable gives its own."""

    DEFAULT_CSS = """
    KeyedTable {
        background: $surface;
        color: $foreground;
        height: 1fr;
        max-height: 100%;
        overflow-x: hidden;

        &:focus {
            background-tint: $foreground 5%;
            & > .keyed-table--cursor {
                background: $block-cursor-background;
                color: $block-cursor-foreground;
                text-style: $block-cursor-text-style;
            }
            & > .keyed-table--header {
                background-tint: $foreground 5%;
            }
        }
        &:dark > .keyed-table--even-row {
            background: $surface-darken-1 40%;
        }
        & > .keyed-table--header {
            text-style: bold;
            background: $panel;
            color: $foreground;
        }
        &:ansi > .keyed-table--header {
            background: ansi_bright_blue;
            color: ansi_default;
        }
        & > .keyed-table--even-row {
            background: $surface-lighten-1 50%;
        }
        & > .keyed-table--cursor {
            background: $block-cursor-blurred-background;
            color: $block-cursor-blurred-foreground;
            text-style: $block-cursor-blurred-text-style;
        }
    }
    """

    cursor_row: var[int] = var(0)
    """Where the cursor is: the index of its row in display order."""

    class Scrolled(Message):
        """Which way the columns can scroll changed: the panel says so in its border."""

        def __init__(self, passed: bool, more: bool, table: KeyedTable | None = None) -> None:
            """Args:
                passed: Columns are scrolled out at the left (Left brings them back).
                more: Columns give way at the right (Right brings them in).
                table: The table whose columns these are.
            """
            super().__init__()
            self.passed = passed
            self.more = more
            self.table = table

        @property
        def control(self) -> KeyedTable | None:
            """The table whose columns these are (a panel with two tells them apart)."""
            return self.table

    class RowSelected(Message):
        """A row was chosen (`enter`, or a click on the row under the cursor): open it."""

        def __init__(self, table: KeyedTable, key: str) -> None:
            """Args:
                table: The table the row is in.
                key: The row's key.
            """
            super().__init__()
            self.table = table
            self.key = key

        @property
        def control(self) -> KeyedTable:
            """The table the row is in."""
            return self.table

    def __init__(
        self, columns: Sequence[tuple[str, str]], *, id: str | None = None,
        classes: str | None = None, yielding: Sequence[str] = (), kept: str | None = None,
        fixed: int = 0,
        yielding_floor: int = YIELDING_FLOOR,
        least_widths: Mapping[str, int] | None = None,
        gap: int = GAP,
    ) -> None:
        """Args:
            columns: (key, label) pairs, in display order.
            id: The widget id.
            classes: CSS classes.
            yielding: Keys of the columns of long free text cut first (down to
                `yielding_floor`), in that order, so that the columns through `kept` fit.
            kept: The last column that yielding ones make space for.
            fixed: How many leading columns stay in place while Right and Left scroll the
                others (the Jobs panel's label, which names the row).
            yielding_floor: The narrowest a yielding column is cut to.
            least_widths: Cells the columns named take at least, whatever their cells now; given,
                no column is laid out narrower than it has been since the table was made,
                so a row whose state or figure changes never moves the columns after it.
            gap: Blank cells between two columns' texts, at least PADDING (each cell has
                PADDING before its text and the rest of the gap after it): a table of many
                short figures (the Jobs panel) draws more of them with a gap of one.
        """
        super().__init__(id=id, classes=classes)
        self._column_keys = [key for key, _ in columns]
        self._labels = [fitted(label) for _, label in columns]
        self._yielding = [self._column_keys.index(key) for key in yielding]
        self._kept = self._column_keys.index(kept) if kept is not None else -1
        self._fixed = fixed
        self._yielding_floor = yielding_floor
        self._after = max(0, gap - PADDING)
        """Blank cells after a cell's text."""
        self._padding = PADDING + self._after
        """Blank cells a column takes besides its text."""
        self._steady = least_widths is not None
        self._widest = [(least_widths or {}).get(key, 0) for key in self._column_keys]
        """Each column's widest natural width so far (from `least_widths` on), when steady."""
        self._rows: dict[str, list[Text]] = {}
        """Each row's cells by key, in display order."""
        self._keys: list[str] = []
        """The rows' keys, in display order."""
        self._order: dict[str, int] = {}
        """Each row's index by key."""
        self._drawn = [0] * len(columns)
        """Each column's drawn width, padding included (0: it gave way)."""
        self._renders: LRUCache[tuple[object, ...], tuple[Text, list[Segment]]] = LRUCache(
            RENDERS_PER_PLACE * len(columns)
        )
        """(row key, column, width, style, post style) → (the cell rendered, its segments); a
        render is used only for the very cell it was made from, so a replaced cell misses."""
        self.shifted = 0
        """How many columns after the fixed ones Right has scrolled out at the left."""
        self._scrolls: tuple[bool, bool] = (False, False)
        """(passed, more) as last told (Scrolled)."""

    # The rows, read.

    @property
    def row_count(self) -> int:
        return len(self._rows)

    @property
    def row_keys(self) -> list[str]:
        """The rows' keys, in display order."""
        return list(self._keys)

    def get_row(self, key: str) -> list[Text]:
        """The cells of the row `key`, in column order, as drawn (KeyError: no such row)."""
        return list(self._rows[key])

    def get_row_index(self, key: str) -> int:
        """Where the row `key` is in display order (KeyError: no such row)."""
        return self._order[key]

    def cursor_key(self) -> str | None:
        """The key of the row under the cursor; None while the table has no row there."""
        keys = self._keys
        return keys[self.cursor_row] if 0 <= self.cursor_row < len(keys) else None

    @property
    def columns(self) -> list[ShownColumn]:
        """The columns as drawn now, in order."""
        wholes = self._natural_widths()
        return [
            ShownColumn(key, label.plain, max(0, drawn - self._padding), whole)
            for key, label, drawn, whole in zip(
                self._column_keys, self._labels, self._drawn, wholes, strict=True
            )
        ]

    # The rows, kept in step.

    def sync(self, rows: Mapping[str, Sequence[Cell]]) -> None:
        """Make the table show exactly `rows` (key → cells in column order), in their order."""
        # Widths change only with a row come or gone or a cell of another width: only then
        # are the columns fitted again.
        chosen = self.cursor_key()
        resized = False
        for stale in [key for key in self._rows if key not in rows]:
            del self._rows[stale]
        changed: list[tuple[str, int]] = []
        for key, cells in rows.items():
            shown = [fitted(cell) for cell in cells]
            current = self._rows.get(key)
            if current is None:
                self._rows[key] = shown
                continue
            for index, (old, new) in enumerate(zip(current, shown, strict=True)):
                if old != new:
                    resized = resized or old.cell_len != new.cell_len
                    current[index] = new
                    changed.append((key, index))
        moved = self._keys != list(rows)
        if moved:
            # A row come, gone or moved: the lines below it show other rows now.
            self._rows = {key: self._rows[key] for key in rows}
            self._keys = list(rows)
            self._order = {key: index for index, key in enumerate(self._keys)}
            self._settle_cursor(chosen)
        refitted = self._refit() if moved or resized else False
        if moved or refitted:
            self.refresh()
        else:
            self._repaint_cells(changed)

    def _settle_cursor(self, chosen: str | None) -> None:
        """The cursor back on the row it was on, where that row is still shown; else on the
        row that took its place."""
        if chosen is not None and chosen in self._order:
            self.move_cursor(row=self._order[chosen], scroll=False)
        else:
            self.move_cursor(row=self.cursor_row, scroll=False)

    def _repaint_cells(self, cells: list[tuple[str, int]]) -> None:
        """Repaint only these (row key, column) cells, whose content was just replaced."""
        top = int(self.scroll_offset.y)
        regions = []
        for key, column in cells:
            y = HEADER + self._order[key] - top
            if self._drawn[column] and HEADER <= y < self.size.height:
                x = sum(self._drawn[:column])
                regions.append(Region(x, y, self._drawn[column], 1))
        if regions:
            self.refresh(*regions)

    # The columns, fitted to the width.

    def on_resize(self, event: events.Resize) -> None:
        self._renders.grow(RENDERS_PER_PLACE * event.size.height * len(self._column_keys))
        self.fit()

    def watch_show_vertical_scrollbar(self) -> None:
        """A scrollbar come or gone changes the width the columns share."""
        self.fit()

    def fit(self) -> None:
        """Draw the leading columns whole and cut the rest to the width: no line is cut at the
        table's edge mid-word. Scrolled (`shifted`), the columns Right passed give way first,
        then the fixed ones and those after the passed ones are fitted alike; a table widened
        until the passed columns fit again scrolls back to them."""
        if self._refit():
            self.refresh()

    def _refit(self) -> bool:
        """Fit the columns (see `fit`) and size the scrollable area; True when a column's
        width changed, so that every line must be drawn again."""
        count = len(self._column_keys)
        self.shifted = min(self.shifted, max(0, count - self._fixed - 1))
        while self.shifted > 0 and not self._more_at_right(self.shifted - 1):
            self.shifted -= 1
        drawn = self._drawn_widths(self.shifted)
        changed = drawn != self._drawn
        self._drawn = drawn
        self.virtual_size = Size(sum(drawn), HEADER + len(self._rows))
        scrolls = (self.shifted > 0, self._more_at_right(self.shifted))
        if scrolls != self._scrolls:
            self._scrolls = scrolls
            self.post_message(self.Scrolled(*scrolls, table=self))
        return changed

    def action_cursor_right(self) -> None:
        """Right scrolls the columns one to the left, a column that gave way at the right
        coming in; the fixed ones stay (the rows are chosen whole: there is no cell cursor)."""
        if self._more_at_right(self.shifted):
            self.shifted += 1
            self.fit()

    def action_cursor_left(self) -> None:
        """Left scrolls back the columns Right scrolled out, one at a time."""
        if self.shifted > 0:
            self.shifted -= 1
            self.fit()

    def _drawn_widths(self, shifted: int) -> list[int]:
        """Each column's drawn width (padding included) with `shifted` columns after the fixed
        ones scrolled out (0)."""
        padding = self._padding
        natural = [width + padding for width in self._natural_widths()]
        shown = [index for index in range(len(natural))
                 if index < self._fixed or index >= self._fixed + shifted]
        kept = sum(1 for index in shown if index <= self._kept) - 1 if self._kept >= 0 else -1
        widths = fitted_widths(
            [natural[index] for index in shown],
            self.scrollable_content_region.width,
            NARROWEST + padding,
            {shown.index(index): self._yielding_floor + padding
             for index in self._yielding if index in shown},
            kept,
        )
        drawn = [0] * len(natural)
        for index, width in zip(shown, widths, strict=True):
            drawn[index] = width
        return drawn

    def _more_at_right(self, shifted: int) -> bool:
        """Whether, scrolled by `shifted`, a column at the right gives way or is cut: there is
        more for Right to bring in."""
        if not self._column_keys:
            return False
        last = len(self._column_keys) - 1
        drawn = self._drawn_widths(shifted)[last]
        whole = self._natural_widths()[last] + self._padding
        return drawn == 0 or (drawn < whole and last not in self._yielding)

    def _natural_widths(self) -> list[int]:
        """Each column's width whole: its label's or its widest cell's."""
        widths = [label.cell_len for label in self._labels]
        for cells in self._rows.values():
            for index, cell in enumerate(cells):
                widths[index] = max(widths[index], cell.cell_len)
        if self._steady:
            self._widest = [max(pair) for pair in zip(widths, self._widest, strict=True)]
            return list(self._widest)
        return widths

    # The cursor.

    def validate_cursor_row(self, row: int) -> int:
        return max(0, min(row, len(self._rows) - 1))

    def watch_cursor_row(self, old: int, new: int) -> None:
        """Repaint the line the cursor left and the one it came to."""
        top = int(self.scroll_offset.y)
        for row in (old, new):
            y = HEADER + row - top
            if HEADER <= y < self.size.height:
                self.refresh(Region(0, y, self.size.width, 1))

    def move_cursor(self, *, row: int, scroll: bool = True) -> None:
        """Put the cursor on the row at index `row` (clamped to the rows there are) and, with
        `scroll`, scroll the rows until it shows."""
        self.cursor_row = row
        if scroll:
            self._scroll_to_cursor()

    def _scroll_to_cursor(self) -> None:
        shown = self._page()
        top = int(self.scroll_offset.y)
        if self.cursor_row < top:
            self.scroll_to(y=self.cursor_row, animate=False)
        elif self.cursor_row >= top + shown:
            self.scroll_to(y=self.cursor_row - shown + 1, animate=False)

    def _page(self) -> int:
        """How many rows show at once."""
        return max(1, self.scrollable_content_region.height - HEADER)

    def action_cursor_up(self) -> None:
        self.move_cursor(row=self.cursor_row - 1)

    def action_cursor_down(self) -> None:
        self.move_cursor(row=self.cursor_row + 1)

    def action_page_up(self) -> None:
        self.move_cursor(row=self.cursor_row - self._page())

    def action_page_down(self) -> None:
        self.move_cursor(row=self.cursor_row + self._page())

    def action_first_row(self) -> None:
        self.move_cursor(row=0)

    def action_last_row(self) -> None:
        self.move_cursor(row=self.row_count - 1)

    def action_select_cursor(self) -> None:
        key = self.cursor_key()
        if key is not None:
            self.post_message(self.RowSelected(self, key))

    def on_click(self, event: events.Click) -> None:
        """A click puts the cursor on its row; a click on the row under the cursor opens it."""
        row = event.style.meta.get("row")
        if not isinstance(row, int) or not 0 <= row < len(self._keys):
            return
        key = self._keys[row]
        event.stop()
        if self._order[key] == self.cursor_row:
            self.action_select_cursor()
        else:
            self.move_cursor(row=self._order[key])

    # Drawing.

    def render_line(self, y: int) -> Strip:
        """Line `y` of the table as shown: the labels, or a row joined from its cells' renders."""
        width = self.size.width
        base = self.rich_style
        if y < HEADER:
            row, key, cells = -1, None, self._labels
            style = self.get_component_rich_style("keyed-table--header")
            post, end = Style.null(), style
        else:
            row = y - HEADER + int(self.scroll_offset.y)
            if row >= len(self._rows):
                return Strip.blank(width, base)
            key = self._keys[row]
            cells = self._rows[key]
            stripe = "keyed-table--odd-row" if row % 2 else "keyed-table--even-row"
            style = self.get_component_rich_style(stripe)
            post = Style.null()
            if row == self.cursor_row:
                cursor = self.get_component_rich_style("keyed-table--cursor")
                style += cursor
                post = Style.from_color(cursor.color) + Style.from_color(bgcolor=cursor.bgcolor)
            end = style
        # Each cell's style carries its place (a click reads the row from it), which keeps
        # cells of one look apart as they are drawn. The place is the row's index, not its
        # key: Textual caches every style it draws (thousands), and keys of rows that come
        # and go for hours would fill those caches with the styles of rows long gone. The
        # row's look and place go on when the line is drawn, not into the cached render: a
        # row that moves up or down, or that the cursor comes to, is not rendered again.
        segments: list[Segment] = []
        for column, (cell, drawn) in enumerate(zip(cells, self._drawn, strict=True)):
            if drawn:
                place = Style.from_meta({"row": row, "column": column})
                rendered = self._rendered(key, column, cell, drawn)
                segments += Segment.apply_style(rendered, style + place, post)
        left = max(0, width - sum(self._drawn))  # the row's look to the edge
        segments.append(Segment(" " * left, end + Style.from_meta({"row": row})))
        return Strip(segments).adjust_cell_length(width, base).simplify()

    def _rendered(self, key: str | None, column: int, cell: Text, width: int) -> list[Segment]:
        """The cell's render from the cache, or rendered now and kept."""
        cache_key = (key, column, width)
        cached = self._renders.get(cache_key)
        if cached is not None and cached[0] is cell:
            return cached[1]
        segments = self.render_cell(cell, width)
        self._renders.set(cache_key, (cell, segments))
        return segments

    def render_cell(self, cell: Text, width: int) -> list[Segment]:
        """One cell drawn `width` wide, padding included, in its text's own styles (the row's
        look goes under them and the cursor's colours over them as the line is drawn)."""
        padded = Padding(cell, (0, self._after, 0, PADDING))
        options = self.app.console_options.update_dimensions(width, 1).update(no_wrap=True)
        return self.app.console.render_lines(padded, options)[0]
