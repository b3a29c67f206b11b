"""How a keyed table's columns share its width (`fitted_widths`, a pure decision): a yielding
column (a long label) is cut, down to its floor, as far as that lets the columns after it be
drawn whole, all of them where it can. Then the table itself, in a bare app: a changed cell is
rendered again alone, from its own cache, and the cursor stays on its row's key."""

from __future__ import annotations

import pytest
from rich.text import Text
from textual.app import App, ComposeResult

from swarmdeck.app.keyed_table import KeyedTable, fitted_widths

NARROWEST = 8
LABEL_FLOOR = {0: 14}


def test_the_label_is_cut_so_that_every_column_is_drawn_whole() -> None:
    assert fitted_widths([30, 10, 10], 45, NARROWEST, LABEL_FLOOR) == [25, 10, 10]


def test_the_label_is_cut_for_as_many_columns_as_its_floor_makes_space_for() -> None:
    assert fitted_widths([30, 10, 10, 40], 45, NARROWEST, LABEL_FLOOR) == [25, 10, 10, 0]


def test_the_label_is_cut_for_the_kept_columns_even_where_they_do_not_fit_whole() -> None:
    assert fitted_widths([30, 40], 50, NARROWEST, LABEL_FLOOR, kept=1) == [14, 36]


def test_a_label_that_fits_is_drawn_whole() -> None:
    assert fitted_widths([20, 10, 10], 45, NARROWEST, LABEL_FLOOR) == [20, 10, 10]


class OneTable(App[None]):
    """A bare app of one keyed table, focused, a cell render counted by its text."""

    def __init__(self) -> None:
        super().__init__()
        self.rendered: list[str] = []
        self.chosen: list[str] = []

    def compose(self) -> ComposeResult:
        yield KeyedTable([("job", "job"), ("state", "state"), ("runtime", "runtime")])

    def on_keyed_table_row_selected(self, event: KeyedTable.RowSelected) -> None:
        self.chosen.append(event.key)


def jobs(count: int, ticked: int | None = None) -> dict[str, list[str]]:
    """`count` running jobs, the one numbered `ticked` a second further on."""
    return {str(n): [f"job {n}", "running", "0:11" if n == ticked else "0:10"]
            for n in range(count)}


def counting_renders(monkeypatch: pytest.MonkeyPatch, app: OneTable) -> None:
    render_cell = KeyedTable.render_cell

    def counted(self: KeyedTable, cell: Text, *args: object) -> object:
        app.rendered.append(cell.plain)
        return render_cell(self, cell, *args)

    monkeypatch.setattr(KeyedTable, "render_cell", counted)


def shown(table: KeyedTable) -> list[str]:
    return [table.render_line(y).text.rstrip() for y in range(table.size.height)]


async def test_a_changed_cell_is_rendered_again_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """A runtime ticking in one row of twenty renders that one cell; every other cell of the
    lines drawn again comes from the table's cache."""
    app = OneTable()
    async with app.run_test(size=(60, 30)) as pilot:
        table = app.query_one(KeyedTable)
        table.sync(jobs(20))
        await pilot.pause()
        counting_renders(monkeypatch, app)
        table.sync(jobs(20, ticked=7))
        await pilot.pause()
        assert app.rendered == ["0:11"]
        assert shown(table)[1 + 7].split() == ["job", "7", "running", "0:11"]
        assert shown(table)[1 + 6].split() == ["job", "6", "running", "0:10"]


async def test_a_sync_with_nothing_new_renders_and_repaints_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    app = OneTable()
    async with app.run_test(size=(60, 30)) as pilot:
        table = app.query_one(KeyedTable)
        table.sync(jobs(20))
        await pilot.pause()
        counting_renders(monkeypatch, app)
        asked: list[tuple[object, ...]] = []
        refresh = KeyedTable.refresh
        monkeypatch.setattr(KeyedTable, "refresh",
                            lambda self, *regions, **kw: (asked.append(regions),
                                                          refresh(self, *regions, **kw))[1])
        table.sync(jobs(20))
        await pilot.pause()
        assert app.rendered == [] and asked == []


async def test_the_cursor_stays_on_its_row_as_rows_come_and_go() -> None:
    app = OneTable()
    async with app.run_test(size=(60, 30)) as pilot:
        table = app.query_one(KeyedTable)
        table.sync(jobs(5))
        table.move_cursor(row=table.get_row_index("3"))
        rows = jobs(5)
        del rows["1"]
        table.sync({"new": ["job new", "queued", ""], **rows})
        await pilot.pause()
        assert table.cursor_key() == "3"
        assert table.row_keys == ["new", "0", "2", "3", "4"]
        del rows["3"]
        table.sync(rows)
        assert table.cursor_key() == "4"  # the row that took its place


async def test_enter_and_a_click_on_the_cursor_row_choose_it() -> None:
    app = OneTable()
    async with app.run_test(size=(60, 30)) as pilot:
        table = app.query_one(KeyedTable)
        table.sync(jobs(5))
        table.focus()
        await pilot.press("down", "enter")
        await pilot.click(KeyedTable, offset=(2, 1 + 3))  # the cursor goes to job 3
        await pilot.click(KeyedTable, offset=(2, 1 + 3))  # and job 3 opens
        await pilot.pause()
        assert app.chosen == ["1", "3"]


async def test_rows_that_come_and_go_are_drawn_with_the_styles_of_the_rows_they_replace() -> None:
    """Textual keeps every style it has drawn in caches of thousands (the ANSI of each one):
    a table whose rows are jobs that come and go for hours must draw them with the same few
    styles, or those caches fill with the styles of jobs long gone and the app's memory grows
    for as long as it runs. A click still finds its row."""
    app = OneTable()
    async with app.run_test(size=(60, 12)) as pilot:
        table = app.query_one(KeyedTable)

        def styles_drawn_after(generations: range) -> set[object]:
            drawn: set[object] = set()
            for generation in generations:
                table.sync({f"{generation}-{n}": [f"job {generation}-{n}", "running", "0:10"]
                            for n in range(5)})
                drawn |= {segment.style for y in range(table.size.height)
                          for segment in table.render_line(y)}
            return drawn

        first = styles_drawn_after(range(0, 10))
        assert styles_drawn_after(range(10, 200)) <= first
        table.focus()
        await pilot.click(KeyedTable, offset=(2, 1 + 2))
        await pilot.click(KeyedTable, offset=(2, 1 + 2))
        await pilot.pause()
        assert app.chosen == ["199-2"]


async def test_the_render_cache_holds_two_renders_a_cell_on_screen_not_thousands() -> None:
    """The cache is for the cells on screen (and a row just gone from each place): rows that come
    and go for hours, their cells changing, leave no more renders behind than that."""
    app = OneTable()
    async with app.run_test(size=(60, 12)) as pilot:
        table = app.query_one(KeyedTable)
        for tick in range(300):
            table.sync({str(n): [f"job {n}", "running", f"{tick}s"]
                        for n in range(tick, tick + 30)})
            for y in range(table.size.height):
                table.render_line(y)
        await pilot.pause()
        on_screen = table.size.height * len(table.columns)
        assert len(table._renders) <= 2 * on_screen


async def test_rows_that_move_up_or_take_the_cursor_are_not_rendered_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A row's look and place go on as the line is drawn: the job above ending, or the cursor
    coming to a row, repaints lines from the cells already rendered."""
    app = OneTable()
    async with app.run_test(size=(60, 30)) as pilot:
        table = app.query_one(KeyedTable)
        table.sync(jobs(20))
        await pilot.pause()
        counting_renders(monkeypatch, app)
        rows = jobs(20)
        del rows["0"]
        table.sync(rows)
        table.focus()
        await pilot.press("down", "down")
        await pilot.pause()
        assert app.rendered == []
        assert shown(table)[1].split() == ["job", "1", "running", "0:10"]
