"""Sizes as people write them (512M, 1.5G, 70%) turned into bytes, and bytes into short text.

Every size swarmdeck reads, on the command line or in the config, goes through this one module,
so a size means the same thing everywhere: units are binary (K = 1024) and a percentage is a
share of a total the caller supplies (normally MemTotal).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from swarmdeck.errors import UsageError

# Importing `decimal`, `fractions` and re and compiling the grammar's regexes would slow every
# caged run, yet the sizes it meets on every start (the config's defaults, "8G") are whole
# numbers with one unit: those are read without any of them, and the regexes and the exact
# arithmetic are imported where a fraction or a percentage really needs them.
if TYPE_CHECKING:
    import re
    from fractions import Fraction

UNITS = "KMGT"
"""The unit letters, in order: K = 1024, M = 1024², G = 1024³, T = 1024⁴."""
MIB = 1 << 20
"""One M: a mebibyte."""

_EXAMPLES = "like 512M, 8G, 1.5G or 70%"
_NUMBER = r"(?P<number>[0-9]+(?:\.[0-9]+)?|\.[0-9]+)"


def _grammar() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """The absolute, percent and not-finite patterns, compiled when a size first needs them
    (and kept by re's own cache of compiled patterns after that)."""
    import re

    return (
        re.compile(_NUMBER + r"\s*(?:(?P<unit>[KMGT])(?:I?B)?|B)?", re.IGNORECASE),
        re.compile(_NUMBER + r"\s*%"),
        re.compile(r"[+-]?(?:nan|inf|infinity)\s*(?:%|[KMGT]?(?:I?B)?)", re.IGNORECASE),
    )


@dataclass(frozen=True)
class SizeSpec:
    """A size as written: either an absolute number of bytes or a percentage of a total.

    A percentage stays a percentage until `resolve` is given the total, so one config serves
    hosts with different amounts of memory.
    """

    absolute: int | None = None
    percent: float | None = None

    def __post_init__(self) -> None:
        if (self.absolute is None) == (self.percent is None):
            raise ValueError("a SizeSpec holds exactly one of absolute and percent")
        if self.absolute is not None and self.absolute < 0:
            raise ValueError(f"a size cannot be negative: {self.absolute}")
        if self.percent is not None and not 0 < self.percent <= 100:
            raise ValueError(f"a percentage must be in (0, 100]: {self.percent}")

    @classmethod
    def of_bytes(cls, n: int) -> SizeSpec:
        """An absolute size of n bytes."""
        return cls(absolute=n)

    @classmethod
    def of_percent(cls, percent: float) -> SizeSpec:
        """A share of whatever total it is later resolved against."""
        return cls(percent=float(percent))

    @classmethod
    def parse(cls, text: str) -> SizeSpec:
        """Read "512M", "1.5G", "70%", "4096"; raise UsageError saying what is wrong."""
        stripped = text.strip()
        if not stripped:
            raise UsageError(f"empty size: give one {_EXAMPLES}")
        whole = _whole_units(stripped)
        if whole is not None:
            return cls(absolute=whole)
        absolute_form, percent_form, not_finite = _grammar()
        if not_finite.fullmatch(stripped):
            raise UsageError(f"size {text!r} is not a finite number: give one {_EXAMPLES}")
        if stripped.startswith("-") and _is_size(stripped[1:].strip()):
            raise UsageError(f"size {text!r} is negative: give one {_EXAMPLES}")
        percent = percent_form.fullmatch(stripped)
        if percent:
            return cls(percent=_parse_percent(text, percent.group("number")))
        absolute = absolute_form.fullmatch(stripped)
        if absolute:
            return cls(absolute=_parse_absolute(text, absolute.group("number"), absolute["unit"]))
        raise UsageError(
            f"size {text!r} is not a number with a unit: give a number, an optional unit "
            f"K, M, G or T (powers of 1024) or a percent sign, {_EXAMPLES}"
        )

    @property
    def is_relative(self) -> bool:
        """True for a percentage, which needs a total before it means any number of bytes."""
        return self.percent is not None

    def resolve(self, total: int) -> int:
        """Bytes this size stands for; a percentage of `total` is rounded down to whole bytes."""
        if self.absolute is not None:
            return self.absolute
        if total < 0:
            raise ValueError(f"a total cannot be negative: {total}")
        return int(_exact(self.percent) * total / 100)

    def __str__(self) -> str:
        """The canonical text: `SizeSpec.parse(str(spec)) == spec` for every spec."""
        if self.absolute is not None:
            return _exact_text(self.absolute)
        return f"{_plain_decimal(self.percent)}%"


def parse_size(text: str, total: int | None = None) -> int:
    """Bytes for a size as written; a percentage needs `total` (normally MemTotal)."""
    spec = SizeSpec.parse(text)
    if spec.is_relative and total is None:
        raise UsageError(
            f"size {text!r} is a percentage, but there is no total to take it of here: "
            "give an absolute size like 8G"
        )
    return spec.resolve(total if total is not None else 0)


SHORT_SIZE_WIDTH = 5
"""The longest text `format_size` gives for a size under 1024T, which every memory figure on a
host is ("1000B", "1023M", "1.23G"): the space a figure is laid out as taking."""


def format_size(n: int) -> str:
    """Bytes as short text ("1.5G", "512M", "0B"): at most 3 significant digits past the
    integer part, exact whenever the exact value is that short.

    Used for display; the text parses back to within 0.5 % of n. The control room formats a
    few figures per job at every refresh, so this is integer arithmetic: the figure n / 1024^k
    rounded half to even as exact fractions would round it, at a fraction of their cost.
    """
    if n < 0:
        return "-" + format_size(-n)
    if n < 1024:
        return f"{n}B"
    exponent = min(len(UNITS), (n.bit_length() - 1) // 10)
    units, scale = _rounded_units(n, exponent)
    if units >= 1024 * scale and exponent < len(UNITS):
        exponent += 1
        units, scale = _rounded_units(n, exponent)
    whole, part = divmod(units, scale)
    if scale == 1:
        return f"{whole}{UNITS[exponent - 1]}"
    digits = f"{part:0{len(str(scale)) - 1}d}".rstrip("0")
    return f"{whole}.{digits}{UNITS[exponent - 1]}" if digits else f"{whole}{UNITS[exponent - 1]}"


def _rounded_units(n: int, exponent: int) -> tuple[int, int]:
    """n / 1024^exponent to 3 significant digits (the whole integer part when it has more),
    rounded half to even, as (units, scale): the figure is units / scale."""
    unit = 1024**exponent
    scale = 1 if n >= 100 * unit else 10 if n >= 10 * unit else 100
    units, rest = divmod(n * scale, unit)
    if 2 * rest > unit or (2 * rest == unit and units % 2):
        units += 1
    return units, scale


def _is_size(text: str) -> bool:
    absolute_form, percent_form, _ = _grammar()
    return bool(absolute_form.fullmatch(text) or percent_form.fullmatch(text))


def _whole_units(text: str) -> int | None:
    """Bytes for the commonest form, ASCII digits and one unit letter ("8G", "256m", "4096"),
    read without the grammar; None for any other text, which the grammar then reads."""
    unit = text[-1:].upper()
    digits = text[:-1] if unit in UNITS else text
    if not (digits.isascii() and digits.isdigit()):
        return None
    exponent = UNITS.index(unit) + 1 if unit in UNITS else 0
    return int(digits) * 1024**exponent


def _parse_percent(text: str, number: str) -> float:
    from decimal import Decimal

    value = Decimal(number)
    if value > 100:
        raise UsageError(f"size {text!r} is over 100%: a share is at most 100%, like 70%")
    if float(value) == 0:
        raise UsageError(f"size {text!r} is no memory at all: a share must be above 0%, like 70%")
    return float(value)


def _parse_absolute(text: str, number: str, unit: str | None) -> int:
    from decimal import Decimal
    from fractions import Fraction

    exponent = UNITS.index(unit.upper()) + 1 if unit else 0
    value = Fraction(Decimal(number)) * 1024**exponent
    if exponent == 0 and value.denominator != 1:
        raise UsageError(f"size {text!r} is not a whole number of bytes: add a unit, like 1.5G")
    return round(value)


def _exact(percent: float | None) -> Fraction:
    """The decimal the person wrote (70.1, not the float nearest to it) as an exact fraction."""
    from decimal import Decimal
    from fractions import Fraction

    return Fraction(Decimal(repr(percent)))


def exact_size(n: int) -> str:
    """Bytes as the shortest text that parses back to exactly n ("96M", "1.5G", "1000B")."""
    return _exact_text(n)


def _exact_text(n: int) -> str:
    """The shortest exact text for n bytes: the largest unit that needs at most 3 decimals."""
    for exponent in range(len(UNITS), 0, -1):
        unit = 1024**exponent
        if n >= unit and (n * 1000) % unit == 0:
            from fractions import Fraction

            return f"{_plain_decimal(Fraction(n, unit))}{UNITS[exponent - 1]}"
    return f"{n}B"


def _plain_decimal(value: Fraction | float | None) -> str:
    """A number as plain decimal text, no exponent, no trailing zeros ("1.5", "70", "0.001")."""
    from decimal import Decimal
    from fractions import Fraction

    if isinstance(value, Fraction):
        # Callers pass values with at most 3 decimals; integer arithmetic keeps every digit.
        whole, thousandths = divmod(round(value * 1000), 1000)
        return f"{whole}.{thousandths:03d}".rstrip("0").rstrip(".")
    text = format(Decimal(repr(value)), "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text
