"""The footer shows whole keys: the help key whatever else gives way, then the others in order
up to the first that does not fit."""

from __future__ import annotations

from swarmdeck.app.footer import shown_keys


def test_every_key_that_fits_is_shown() -> None:
    assert shown_keys([10, 8, 8], 30, 1) == [True, True, True]


def test_keys_past_the_first_that_does_not_fit_give_way_whole() -> None:
    assert shown_keys([10, 8, 12, 4], 29, 1) == [True, True, False, False]


def test_the_help_key_is_kept_before_the_keys_ahead_of_it() -> None:
    assert shown_keys([14, 14, 14, 8], 30, 3) == [True, False, False, True]
