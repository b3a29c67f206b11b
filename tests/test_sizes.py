"""Sizes: what people write parses to the bytes they mean, and bad text says what is wrong."""

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from swarmdeck.errors import UsageError
from swarmdeck.exitcodes import ExitCode
from swarmdeck.sizes import SHORT_SIZE_WIDTH, SizeSpec, format_size, parse_size

K, M, G, T = 1024, 1024**2, 1024**3, 1024**4


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("512M", 512 * M),
        ("8G", 8 * G),
        ("1.5G", 3 * G // 2),
        ("4096", 4096),
        ("0", 0),
        ("0B", 0),
        ("2K", 2 * K),
        ("3T", 3 * T),
        ("8g", 8 * G),
        ("8GB", 8 * G),
        ("8GiB", 8 * G),
        ("8 gib", 8 * G),
        ("  512M\n", 512 * M),
        ("100B", 100),
        (".5G", G // 2),
        ("0.1K", 102),
    ],
)
def test_absolute_sizes_use_binary_units(text: str, expected: int) -> None:
    assert parse_size(text) == expected


def test_percentage_is_a_share_of_the_total_rounded_down() -> None:
    assert parse_size("70%", total=1000) == 700
    assert parse_size("100%", total=12345) == 12345
    assert parse_size("12.5%", total=8 * G) == G
    assert parse_size("33.3%", total=1000) == 333
    assert parse_size("0.1%", total=999) == 0


def test_percentage_resolves_the_decimal_written_not_its_float() -> None:
    # 70.1 has no exact float; resolving the float would give 700999999...9 for 10**12.
    assert SizeSpec.parse("70.1%").resolve(10**12) == 701 * 10**9


def test_percentage_without_a_total_is_refused() -> None:
    with pytest.raises(UsageError, match="no total"):
        parse_size("70%")


def test_absolute_size_ignores_the_total() -> None:
    assert parse_size("1G", total=10) == G
    assert SizeSpec.parse("1G").resolve(0) == G


def test_spec_keeps_a_percentage_relative_until_resolved() -> None:
    spec = SizeSpec.parse("50%")
    assert spec.is_relative
    assert spec.resolve(8 * G) == 4 * G
    assert spec.resolve(2 * G) == G
    assert not SizeSpec.parse("2G").is_relative


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("1536M", "1.5G"),
        ("1024", "1K"),
        ("1000", "1000B"),
        ("0", "0B"),
        ("70%", "70%"),
        ("070.50%", "70.5%"),
        ("8gib", "8G"),
        ("1.125G", "1.125G"),
        ("512M", "512M"),
        ("1024T", "1024T"),
        ("0.001%", "0.001%"),
    ],
)
def test_str_gives_the_canonical_text(text: str, canonical: str) -> None:
    assert str(SizeSpec.parse(text)) == canonical


@pytest.mark.parametrize(
    ("n", "text"),
    [
        (0, "0B"),
        (1, "1B"),
        (1023, "1023B"),
        (1024, "1K"),
        (1536, "1.5K"),
        (512 * M, "512M"),
        (3 * G // 2, "1.5G"),
        (5 * G // 4, "1.25G"),
        (123456789, "118M"),
        (10 * G + G // 3, "10.3G"),
        (M - 1, "1M"),
        (2048 * T, "2048T"),
        (-3 * G // 2, "-1.5G"),
    ],
)
def test_format_size_is_short(n: int, text: str) -> None:
    assert format_size(n) == text


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "empty"),
        ("   ", "empty"),
        ("-1G", "negative"),
        ("-5%", "negative"),
        ("0%", "above 0%"),
        ("0.0%", "above 0%"),
        ("100.5%", "over 100%"),
        ("150%", "over 100%"),
        ("abc", "not a number with a unit"),
        ("1.5.5G", "not a number with a unit"),
        ("8X", "not a number with a unit"),
        ("8 G B", "not a number with a unit"),
        ("5iB", "not a number with a unit"),
        ("1e3", "not a number with a unit"),
        ("+5G", "not a number with a unit"),
        ("1.5", "not a whole number of bytes"),
        ("nan", "not a finite number"),
        ("NaN%", "not a finite number"),
        ("inf", "not a finite number"),
        ("-infG", "not a finite number"),
        ("Infinity", "not a finite number"),
    ],
)
def test_bad_size_says_what_is_wrong_and_shows_a_right_one(text: str, problem: str) -> None:
    with pytest.raises(UsageError) as caught:
        SizeSpec.parse(text)
    message = caught.value.message
    assert problem in message
    assert "like " in message
    assert "\n" not in message
    assert caught.value.exit_code == ExitCode.USAGE


def test_spec_cannot_be_built_holding_both_or_neither() -> None:
    with pytest.raises(ValueError):
        SizeSpec()
    with pytest.raises(ValueError):
        SizeSpec(absolute=1, percent=1.0)
    with pytest.raises(ValueError):
        SizeSpec.of_bytes(-1)
    with pytest.raises(ValueError):
        SizeSpec.of_percent(0)


@given(st.integers(min_value=0, max_value=2**70))
def test_format_then_parse_stays_within_rounding(n: int) -> None:
    back = parse_size(format_size(n))
    assert abs(back - n) <= n / 200 + 1


@given(st.integers(min_value=0, max_value=2**70))
def test_parse_of_str_gives_back_an_absolute_spec(n: int) -> None:
    spec = SizeSpec.of_bytes(n)
    assert SizeSpec.parse(str(spec)) == spec


@given(st.floats(min_value=0, max_value=100, exclude_min=True, allow_nan=False))
def test_parse_of_str_gives_back_a_percentage_spec(percent: float) -> None:
    spec = SizeSpec.of_percent(percent)
    assert SizeSpec.parse(str(spec)) == spec


@given(st.integers(min_value=0, max_value=2**50), st.integers(min_value=1, max_value=1000))
def test_percentage_never_resolves_above_its_share(total: int, permille: int) -> None:
    spec = SizeSpec.parse(f"{permille / 10}%")
    resolved = spec.resolve(total)
    assert 0 <= resolved <= total
    assert resolved * 1000 <= total * permille


def _format_size_by_fractions(n: int) -> str:
    """format_size's rule in exact fractions, as it was first written: the figure n / 1024^k
    for the largest unit that leaves it at least 1, rounded half to even to three significant
    digits (the whole integer part when it has more), moved up a unit when it rounds to 1024."""
    if n < 0:
        return "-" + _format_size_by_fractions(-n)
    if n < 1024:
        return f"{n}B"
    exponent = min(4, (n.bit_length() - 1) // 10)

    def rounded(k: int) -> Fraction:
        value = Fraction(n, 1024**k)
        return Fraction(round(value)) if value >= 100 else round(value, 1 if value >= 10 else 2)

    value = rounded(exponent)
    if value >= 1024 and exponent < 4:
        exponent += 1
        value = rounded(exponent)
    whole, thousandths = divmod(round(value * 1000), 1000)
    return f"{whole}.{thousandths:03d}".rstrip("0").rstrip(".") + "KMGT"[exponent - 1]


@given(st.integers(min_value=-(2**62), max_value=2**62))
def test_format_size_rounds_as_exact_fractions_do(n: int) -> None:
    assert format_size(n) == _format_size_by_fractions(n)


@pytest.mark.parametrize("unit", [1, 1024, 1024**2, 1024**3, 1024**4])
def test_format_size_rounds_halves_to_even_at_every_edge(unit: int) -> None:
    for figure in (1, 9, 10, 99, 100, 1023, 1024, 2048):
        for step in range(-3 * 1024, 3 * 1024 + 1, 7):
            n = figure * unit * 1024 + step * max(1, unit // 1024)
            assert format_size(n) == _format_size_by_fractions(n), n


def test_no_size_under_1024t_is_longer_than_the_short_size_width() -> None:
    edges = [
        k * 1024**unit + step for unit in range(5) for k in range(1025) for step in (-1, 0, 1)
    ]
    longest = max(len(format_size(n)) for n in edges if 0 <= n < 1024**5)
    assert longest == SHORT_SIZE_WIDTH
