"""On a short screen the Jobs and Agents row and the focused panel's row stay open; every other
panel collapses to its title line (the Hosts card stays open while it, or nothing, has the focus,
and shows its glance, a line per host, where it would collapse)."""

from __future__ import annotations

from swarmdeck.app.collapse import (
    collapsed_panels,
    focused_height,
    glance_lines,
    glanced_panels,
    opened_rows,
)

ROWS = (("hosts",), ("jobs", "agents"), ("gpus", "locks"), ("watchdog",), ("alerts",))


def test_with_the_hosts_card_focused_only_the_panels_below_jobs_and_agents_collapse() -> None:
    assert collapsed_panels(ROWS, 1, "hosts") == {"gpus", "locks", "watchdog", "alerts"}


def test_with_nothing_focused_the_hosts_card_stays_open() -> None:
    assert collapsed_panels(ROWS, 1, None) == {"gpus", "locks", "watchdog", "alerts"}


def test_a_focused_panel_opens_its_row_and_collapses_the_hosts_card() -> None:
    assert collapsed_panels(ROWS, 1, "locks") == {"hosts", "watchdog", "alerts"}
    assert collapsed_panels(ROWS, 1, "alerts") == {"hosts", "gpus", "locks", "watchdog"}


def test_focus_on_jobs_or_agents_leaves_that_row_alone_open() -> None:
    assert collapsed_panels(ROWS, 1, "agents") == {"hosts", "gpus", "locks", "watchdog", "alerts"}


EMPTY = frozenset({"jobs", "agents", "gpus", "locks", "watchdog", "alerts"})


def test_empty_collapsed_rows_open_top_down_as_far_as_the_spare_lines_go() -> None:
    collapsed = collapsed_panels(ROWS, 1, None)
    assert opened_rows(ROWS, collapsed, EMPTY, 6) == {"gpus", "locks", "watchdog", "alerts"}
    assert opened_rows(ROWS, collapsed, EMPTY, 5) == {"gpus", "locks", "watchdog"}
    assert opened_rows(ROWS, collapsed, EMPTY, 1) == frozenset()


def test_a_row_with_anything_to_show_stays_collapsed_and_the_rows_below_it_may_open() -> None:
    collapsed = collapsed_panels(ROWS, 1, None)
    assert opened_rows(ROWS, collapsed, EMPTY - {"locks"}, 6) == {"watchdog", "alerts"}


def test_the_hosts_card_shows_its_glance_where_it_would_collapse() -> None:
    assert glanced_panels(collapsed_panels(ROWS, 1, "watchdog")) == {"hosts"}
    assert glanced_panels(collapsed_panels(ROWS, 1, "hosts")) == frozenset()


def test_a_glance_is_its_title_line_and_a_line_per_item_up_to_a_quarter_of_the_screen() -> None:
    assert glance_lines(2, 24) == 3
    assert glance_lines(9, 24) == 6
    assert glance_lines(9, 30) == 7
    assert glance_lines(0, 24) == 2, "this host's line, before its first reading too"
    assert glance_lines(3, 8) == 2, "at least the first item's line"


def test_the_focused_row_takes_half_the_screen_or_what_the_rest_leaves() -> None:
    assert focused_height(30, 12) == 15
    assert focused_height(24, 13) == 11
    assert focused_height(12, 11) == 3, "its title line, one line and its bottom border"
