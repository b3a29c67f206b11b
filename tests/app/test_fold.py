"""On a short screen the Jobs and Agents row and the focused panel's row stay open; every other
panel folds to its title line (the Hosts card stays open while it, or nothing, has the focus)."""

from __future__ import annotations

from swarmdeck.app.fold import folded_panels, opened_rows

ROWS = (("hosts",), ("jobs", "agents"), ("gpus", "locks"), ("watchdog",), ("alerts",))


def test_with_the_hosts_card_focused_only_the_panels_below_jobs_and_agents_fold() -> None:
    assert folded_panels(ROWS, 1, "hosts") == {"gpus", "locks", "watchdog", "alerts"}


def test_with_nothing_focused_the_hosts_card_stays_open() -> None:
    assert folded_panels(ROWS, 1, None) == {"gpus", "locks", "watchdog", "alerts"}


def test_a_focused_panel_opens_its_row_and_folds_the_hosts_card() -> None:
    assert folded_panels(ROWS, 1, "locks") == {"hosts", "watchdog", "alerts"}
    assert folded_panels(ROWS, 1, "alerts") == {"hosts", "gpus", "locks", "watchdog"}


def test_focus_on_jobs_or_agents_leaves_that_row_alone_open() -> None:
    assert folded_panels(ROWS, 1, "agents") == {"hosts", "gpus", "locks", "watchdog", "alerts"}


EMPTY = frozenset({"jobs", "agents", "gpus", "locks", "watchdog", "alerts"})


def test_empty_folded_rows_open_top_down_as_far_as_the_spare_lines_go() -> None:
    folded = folded_panels(ROWS, 1, None)
    assert opened_rows(ROWS, folded, EMPTY, 6) == {"gpus", "locks", "watchdog", "alerts"}
    assert opened_rows(ROWS, folded, EMPTY, 5) == {"gpus", "locks", "watchdog"}
    assert opened_rows(ROWS, folded, EMPTY, 1) == frozenset()


def test_a_row_with_anything_to_show_stays_folded_and_the_rows_below_it_may_open() -> None:
    folded = folded_panels(ROWS, 1, None)
    assert opened_rows(ROWS, folded, EMPTY - {"locks"}, 6) == {"watchdog", "alerts"}
