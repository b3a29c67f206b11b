"""How a keyed table's columns share its width (`fitted_widths`, a pure decision): a yielding
column (a long label) is cut, down to its floor, as far as that lets the columns after it be
drawn whole, all of them where it can."""

from __future__ import annotations

from swarmdeck.app.keyed_table import fitted_widths

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
