"""The footer shows whole keys: the help key whatever else gives way, then the others in order
up to the first that does not fit; under --readonly, no key that would change anything."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixed_room import fixed_app
from pilot_waits import probed

from swarmdeck.app.footer import shown_keys


def test_every_key_that_fits_is_shown() -> None:
    assert shown_keys([10, 8, 8], 30, 1) == [True, True, True]


def test_keys_past_the_first_that_does_not_fit_give_way_whole() -> None:
    assert shown_keys([10, 8, 12, 4], 29, 1) == [True, True, False, False]


def test_the_help_key_is_kept_before_the_keys_ahead_of_it() -> None:
    assert shown_keys([14, 14, 14, 8], 30, 3) == [True, False, False, True]


@pytest.mark.parametrize("readonly", [False, True], ids=["writable", "readonly"])
@pytest.mark.parametrize("panel", ["2", "5", "6", "7"])
async def test_read_only_footer_offers_no_key_that_acts(
    isolated_home: Path, panel: str, readonly: bool
) -> None:
    """Under --readonly the footer lists no key that would change anything (each refuses, so
    offering it is a lie), the panels' keys (Watchdog a/k/y/d, Alerts a) as well as the app's;
    writable, the same footer offers them all."""
    app = fixed_app(isolated_home, watched=True, readonly=readonly)
    async with app.run_test(size=(200, 60)) as pilot:
        await probed(pilot)
        await pilot.press(panel)
        await pilot.pause()
        shown = {getattr(key, "key", None) for key in app.query("FooterKey")}
        acting = {"n", "r", "l", "m"} | {
            "6": {"a", "k", "y", "d"}, "7": {"a"}
        }.get(panel, set())
        if readonly:
            assert not shown & acting, shown
            assert "question_mark" in shown and "q" in shown
        else:
            assert acting <= shown, shown
