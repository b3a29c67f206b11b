"""The Jobs table's columns: every one drawn whole where the panel is wide enough (a long
label cut for them), the least important giving way first where it is not (the order of
views/jobs.PANEL_COLUMNS, the last first), and Right and Left scrolling the columns, the
label kept, so that what gave way is reached in the table, not only in the job's detail."""

from __future__ import annotations

from pathlib import Path

from fixed_room import fixed_app
from pilot_waits import probed
from test_fit import drawn_lines, screen_lines

from swarmdeck.views.jobs import PANEL_COLUMNS

LABELS = [label for _key, label in PANEL_COLUMNS]


def header(app) -> str:
    return drawn_lines(screen_lines(app), app.query_one("#jobs-table"))[0]


def shown_labels(app) -> list[str]:
    """The column labels the Jobs table's header shows whole, in order."""
    line = header(app)
    return sorted((label for label in LABELS if f" {label} " in f" {line} "), key=line.index)


async def test_at_160x45_the_memory_figures_come_before_current_and_cores(
    isolated_home: Path,
) -> None:
    """What admission booked, the peak and the cap come right after the state, then the
    runtime; the memory now and the cores in use follow them, before the admission details."""
    app = fixed_app(isolated_home)
    async with app.run_test(size=(160, 45)) as pilot:
        await probed(pilot)
        await pilot.pause()
        lines = drawn_lines(screen_lines(app), app.query_one("#jobs-table"))
    assert LABELS[:8] == ["label", "state", "booked", "peak", "cap", "runtime", "current",
                          "cores"]
    assert all(f" {label} " in f" {lines[0]} " for label in LABELS[:7]), lines[0]


async def test_every_column_is_drawn_whole_where_cutting_the_label_makes_space(
    isolated_home: Path,
) -> None:
    """At 226 columns the Jobs panel is a few cells short of every column whole with its
    labels whole: the labels are cut, and no column gives way."""
    app = fixed_app(isolated_home)
    async with app.run_test(size=(226, 45)) as pilot:
        await probed(pilot)
        await pilot.pause()
        assert shown_labels(app) == LABELS, header(app)
        lines = drawn_lines(screen_lines(app), app.query_one("#jobs-table"))
    assert any(line.strip().startswith("pytest -n 8") and "…" in line for line in lines), lines


async def test_right_and_left_scroll_the_jobs_columns_the_label_kept(
    isolated_home: Path,
) -> None:
    """At 160×45 host, admitted via and oom adj do not fit: Right brings them in a column at a
    time, the label staying first; Left goes back to where the table started; the up and down
    keys still move the cursor."""
    app = fixed_app(isolated_home)
    async with app.run_test(size=(160, 45)) as pilot:
        await probed(pilot)
        table = app.query_one("#jobs-table")
        table.focus()
        await pilot.pause()
        start = shown_labels(app)
        assert "oom adj" not in start and "admitted via" not in start, start
        panel = app.query_one("#jobs")
        assert str(panel.border_subtitle).endswith(" · more columns →"), panel.border_subtitle
        for _ in LABELS:
            await pilot.press("right")
            await pilot.pause()
            if "oom adj" in shown_labels(app):
                break
        scrolled = shown_labels(app)
        assert scrolled[0] == "label", scrolled
        assert {"host", "admitted via", "oom adj"} <= set(scrolled), scrolled
        await pilot.press("right")
        await pilot.pause()
        assert shown_labels(app) == scrolled, "nothing more at the right: Right stays"
        assert str(panel.border_subtitle).endswith(" · ← more columns"), panel.border_subtitle
        await pilot.press("down")
        assert table.cursor_row == 1
        for _ in LABELS:
            await pilot.press("left")
        await pilot.pause()
        assert shown_labels(app) == start
        assert str(panel.border_subtitle).endswith(" · more columns →"), panel.border_subtitle


async def test_a_jobs_table_with_every_column_whole_says_nothing_of_scrolling(
    isolated_home: Path,
) -> None:
    app = fixed_app(isolated_home)
    async with app.run_test(size=(250, 45)) as pilot:
        await probed(pilot)
        await pilot.pause()
        assert "more columns" not in str(app.query_one("#jobs").border_subtitle)
