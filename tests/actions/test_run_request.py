"""A run request built in code rather than read from the command line is held to the rules
the flags are: a span a flag may give, else one line and 251."""

from __future__ import annotations

import math

import pytest

from swarmdeck.actions.run_request import (
    MIN_CAP,
    RunRequest,
    checked_cap,
    checked_seconds,
    thread_count,
)
from swarmdeck.actions.runner import check_request
from swarmdeck.errors import UsageError
from swarmdeck.exitcodes import ExitCode


@pytest.mark.parametrize(
    ("changes", "says"),
    [
        ({"timeout": math.inf}, "--timeout inf is over a year"),
        ({"timeout": 0.0}, "--timeout 0 is no time at all"),
        ({"wait": math.nan}, "--wait nan is not a number of seconds"),
        ({"wait": -1.0}, "--wait -1 is below 0"),
    ],
)
def test_a_request_with_a_span_no_flag_may_give_is_refused(
    changes: dict[str, float], says: str
) -> None:
    with pytest.raises(UsageError) as caught:
        check_request(RunRequest(argv=["true"], **changes))
    assert caught.value.exit_code == ExitCode.USAGE
    assert caught.value.message.startswith(says), caught.value.message


def test_a_span_in_bounds_or_none_is_given_back() -> None:
    assert checked_seconds("--wait", None, zero_ok=True) is None
    assert checked_seconds("--wait", 0.0, zero_ok=True) == 0.0
    assert checked_seconds("--timeout", 1800.0, zero_ok=False) == 1800.0


@pytest.mark.parametrize(("text", "cap"), [("0.5K", 512), ("1M", 1024**2), ("4095K", 4095 * 1024)])
def test_a_cap_too_small_to_start_a_job_in_is_refused(text: str, cap: int) -> None:
    with pytest.raises(UsageError) as caught:
        checked_cap(text, cap)
    assert caught.value.exit_code == ExitCode.USAGE
    assert caught.value.message.startswith(f"--cap {text} is under 4M, the least a job can be")


def test_the_least_cap_is_given_back() -> None:
    assert checked_cap("4M", MIN_CAP) == MIN_CAP == 4 * 1024**2


@pytest.mark.parametrize("text", ["1.5", "many", "", "4x"])
def test_a_thread_count_that_is_no_whole_number_is_refused_as_a_count_out_of_range(
    text: str,
) -> None:
    with pytest.raises(UsageError) as caught:
        thread_count(text)
    assert caught.value.message == f"--threads {text}: give a number from 1 to 65536"


def test_a_whole_thread_count_is_read() -> None:
    assert thread_count("16") == 16
