"""A run request built in code rather than read from the command line is held to the rules
the flags are: a span a flag may give, else one line and 251."""

from __future__ import annotations

import math

import pytest

from swarmdeck.actions.run_request import RunRequest, checked_seconds
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
