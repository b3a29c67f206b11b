"""The one format for spans of time that panels, `status`, hooks and the peer cache share."""

from __future__ import annotations

from swarmdeck.durations import NONE, age_text, running_runtime_text, runtime_text


def test_runtime_is_given_to_the_second_below_an_hour() -> None:
    assert [runtime_text(s) for s in (0, 42.9, 425, 3725, 90061)] == [
        "0s", "42s", "7m05s", "1h02m", "25h01m",
    ]
    assert runtime_text(None) == NONE


def test_age_is_the_largest_whole_unit_and_never_negative() -> None:
    assert [age_text(s) for s in (-3, 42, 425, 3725, 200000)] == ["0s", "42s", "7m", "1h", "2d"]


def test_a_running_runtime_changes_once_a_minute_not_every_refresh() -> None:
    assert [running_runtime_text(s) for s in (0, 42.9, 59.9, 60, 425, 479, 3725)] == [
        "<1m", "<1m", "<1m", "1m", "7m", "7m", "1h02m",
    ]
    assert running_runtime_text(None) == NONE
