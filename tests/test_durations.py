"""The one format for spans of time that panels, `status`, hooks and the peer cache share."""

from __future__ import annotations

import math

import pytest

from swarmdeck.durations import (
    MAX_SECONDS,
    NONE,
    age_text,
    finite,
    running_runtime_text,
    runtime_text,
    seconds_above_zero,
    seconds_or_zero,
    seconds_problem,
    whole_milliseconds,
)


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


def test_no_span_makes_a_text_raise() -> None:
    for seconds in (math.inf, -math.inf, math.nan, 1e300):
        for text in (runtime_text, running_runtime_text, age_text):
            assert isinstance(text(seconds), str)
    assert runtime_text(math.inf) == NONE
    assert age_text(math.nan) == NONE


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("1e999", "over a year"),
        ("inf", "over a year"),
        ("1e400", "over a year"),
        (str(MAX_SECONDS + 1), "over a year"),
        ("nan", "not a number of seconds"),
        ("", "not a number of seconds"),
        ("soon", "not a number of seconds"),
        ("-1", "is below 0: give 0 or more seconds"),
        ("-inf", "give 0 or more seconds"),
    ],
)
def test_a_span_no_flag_may_give_is_refused_saying_why(text: str, says: str) -> None:
    with pytest.raises(ValueError, match=says) as caught:
        seconds_or_zero(text)
    assert str(caught.value).startswith(text or repr(text))
    assert "\n" not in str(caught.value)


def test_zero_is_a_span_only_where_the_flag_allows_it() -> None:
    assert seconds_or_zero("0") == 0
    with pytest.raises(ValueError, match="give more than 0 seconds"):
        seconds_above_zero("0")
    assert seconds_above_zero("1.5") == 1.5
    assert seconds_above_zero(str(MAX_SECONDS)) == MAX_SECONDS


def test_the_problem_of_a_span_already_read_is_the_same_as_of_its_text() -> None:
    assert seconds_problem(math.nan) == "is not a number of seconds: give one like 600"
    assert seconds_problem(0, zero_ok=False) == "is no time at all: give more than 0 seconds"
    assert seconds_problem(600) is None


@pytest.mark.parametrize(
    "number",
    [0.0, -0.0, 1.5, -2.0, 1e308, -1e308, 5e-324, math.inf, -math.inf, math.nan, 7, 10**300],
)
def test_finite_answers_as_math_isfinite(number: float) -> None:
    assert finite(number) is math.isfinite(number)


@pytest.mark.parametrize("seconds", [0.0, 0.0004, 0.001, 0.0015, 0.25, 1.0, 2.0000001, 59.9999])
def test_whole_milliseconds_rounds_up_as_math_ceil(seconds: float) -> None:
    assert whole_milliseconds(seconds) == math.ceil(seconds * 1000)
