"""Hypothesis over the config schema: any file either loads or is refused in one line, exit 251.

Documents are built from the schema's own sections and keys (and some that are not in it), with
values of every TOML type at the edges of what they can hold: huge and tiny numbers, infinities,
strings with control characters, arrays and inline tables nested at random. Whatever comes out,
loading gives a Config (which `config show` can describe) or a ConfigError of one line; never
another exception.
"""

from __future__ import annotations

import json
import math
from dataclasses import fields
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swarmdeck.config import SECTIONS, HostConfig, describe_config, parse_config
from swarmdeck.errors import ConfigError
from swarmdeck.exitcodes import ExitCode

PATH = Path("/fuzz/config.toml")
KEYS = {name: [item.name for item in fields(cls)] + ["bogus"] for name, cls in SECTIONS.items()}
HOST_KEYS = [item.name for item in fields(HostConfig)] + ["bogus"]

_numbers = st.one_of(
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.sampled_from([0, 1, -1, 2**31, 2**53 + 1, 9223372036854775807, -9223372036854775808]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([1e308, -1e308, 1e-320, 5e-324, 0.0, -0.0, 0.5, 1.5, 100.0, 1e6]),
)
_strings = st.one_of(
    st.text(max_size=40),
    st.sampled_from(["2G", "10%", "0%", "101%", "-1G", "99999T", "1e9", "box2", "a\nb", "", "é",
                     "(unclosed", ".*", "(a+)+$", "127.0.0.1", "x" * 300, "\x00", "1.5G"]),
)
_scalars = st.one_of(_numbers, _strings, st.booleans())
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.sampled_from(["a", "b", "name"]), inner, max_size=3),
    ),
    max_leaves=12,
)


def _toml(value: Any) -> str:
    """A value written as TOML (JSON string escapes are TOML escapes too)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(item) for item in value) + "]"
    return "{" + ", ".join(f"{key} = {_toml(item)}" for key, item in value.items()) + "}"


@st.composite
def documents(draw: st.DrawFn) -> str:
    lines: list[str] = []
    for section in draw(st.lists(st.sampled_from([*KEYS, "bogus"]), max_size=4, unique=True)):
        lines.append(f"[{section}]")
        keys = KEYS.get(section, ["x"])
        for key in draw(st.lists(st.sampled_from(keys), max_size=5, unique=True)):
            lines.append(f"{key} = {_toml(draw(_values))}")
    for _ in range(draw(st.integers(0, 3))):
        lines.append("[[hosts]]")
        for key in draw(st.lists(st.sampled_from(HOST_KEYS), max_size=6, unique=True)):
            value = draw(st.one_of(_values, st.just("box"), st.just("10.0.0.2")))
            lines.append(f"{key} = {_toml(value)}")
    return "\n".join(lines) + "\n"


def _loads_or_one_line(text: str) -> None:
    try:
        config = parse_config(text, PATH)
    except ConfigError as error:
        assert error.exit_code == ExitCode.USAGE
        assert "\n" not in error.message and "\r" not in error.message, error.message
        assert error.message.startswith(f"config {PATH}"), error.message
        return
    for row in describe_config(config):
        assert "\n" not in row.key + row.value + row.source + row.doc


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents())
def test_documents_over_the_schema_load_or_fail_in_one_line(text: str) -> None:
    _loads_or_one_line(text)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_any_text_loads_or_fails_in_one_line(text: str) -> None:
    _loads_or_one_line(text)


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(["[", "{a = "]), st.integers(1, 5000))
def test_nesting_of_any_depth_loads_or_fails_in_one_line(opening: str, depth: int) -> None:
    closing = "]" if opening == "[" else "}"
    inner = "1" if opening == "{a = " else ""
    _loads_or_one_line("x = " + opening * depth + inner + closing * depth + "\n")
