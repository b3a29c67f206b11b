"""ExitCode and the plain numbers the run path uses are one list: neither has a code the other
lacks, and each name means the same number in both."""

from swarmdeck import exit_numbers
from swarmdeck.exitcodes import ExitCode


def test_every_exit_code_is_named_with_its_number_in_both_places() -> None:
    numbers = {name: value for name, value in vars(exit_numbers).items() if name.isupper()}
    assert numbers == {code.name: code.value for code in ExitCode}
    assert all(type(value) is int for value in numbers.values())
