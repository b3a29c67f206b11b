"""json_text.loads and dumps answer every input exactly as json.loads and json.dumps do: the same
value or text, or the same error.

The fast paths drive json's C scanner and encoder themselves; anything they do not plainly accept
goes to json. So the inputs that matter are the ones where the two could part: other encodings,
marks, data after the value, whitespace json does not skip, constants, nesting past the recursion
limit; for writing, floats, non-ASCII and lone surrogates, keys that are not strings, values json
cannot write, cycles.
"""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from swarmdeck.json_text import REFUSED, dumps, loads, scanned


def _outcome(function, raw: bytes):
    try:
        value = function(raw)
    except RecursionError:
        return ("error", "RecursionError")
    except Exception as error:
        return ("error", type(error).__name__, str(error))
    return ("value", json.dumps(value, sort_keys=True, allow_nan=True), _nan_paths(value))


def _nan_paths(value) -> str:
    """NaN is not equal to itself: compare where NaNs are, the rest by their JSON text."""
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}:{_nan_paths(v)}" for k, v in sorted(value.items())) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_nan_paths(v) for v in value) + "]"
    return type(value).__name__


def _same_as_json(raw: bytes) -> None:
    assert _outcome(loads, raw) == _outcome(json.loads, raw), raw[:200]
    text = raw.decode("utf-8", "surrogatepass") if _decodes(raw) else None
    if text is not None:
        assert _outcome(loads, text) == _outcome(json.loads, text), raw[:200]
    fast = scanned(raw)
    if fast is not REFUSED:
        assert _outcome(lambda _: fast, raw) == _outcome(json.loads, raw), raw[:200]


def _decodes(raw: bytes) -> bool:
    try:
        raw.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        return False
    return True


EDGES = [
    b"", b" ", b"{}", b" {} ", b"\t\n\r{}\r\n", b"{}\x0b", b"{}\x0c", b"{} x", b"{}{}",
    b"\xef\xbb\xbf{}", b"\xff\xfe{\x00}\x00", b"\xfe\xff\x00{\x00}", b"{\x00}\x00",
    b"\x00{\x00}", b'"\xed\xa0\x80"', b'"\\ud800"', b'{"a": "\x01"}', b'{"a": NaN}',
    b"[Infinity, -Infinity]", b"[1e400]", b"-0", b"1.0", b"12345678901234567890", b"null",
    b"true", b"[1,]", b'{"a":1,}', b"\xff", b"\xc3", b'{"\xc3\xa9": "\xf0\x9f\x99\x82"}',
    b"[" * 100_000 + b"]" * 100_000, b'{"a":' * 2000, b"\xe2\x80\xa8{}", b"\xc2\xa0{}",
    b'{"a": 1, "a": 2}', b"  \n", b"[]\n\n", b"nul", b'"abc',
]


@pytest.mark.parametrize("raw", EDGES, ids=range(len(EDGES)))
def test_edge_inputs_read_as_json_reads_them(raw: bytes) -> None:
    _same_as_json(raw)


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=400, deadline=None)
@given(JSON_VALUES, st.sampled_from(["", " ", "\n", "\t", "\r\n", "\x0b", "x", "\x00"]),
       st.sampled_from(["", " ", "\n", "\ufeff", "\x00"]), st.booleans())
def test_generated_json_reads_as_json_reads_it(value, after, before, ascii_only) -> None:
    text = before + json.dumps(value, ensure_ascii=ascii_only) + after
    _same_as_json(text.encode("utf-8", "surrogatepass"))


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=64))
def test_any_bytes_read_as_json_reads_them(raw: bytes) -> None:
    _same_as_json(raw)


@settings(max_examples=200, deadline=None)
@given(JSON_VALUES, st.integers(min_value=0, max_value=200), st.binary(min_size=1, max_size=3))
def test_damaged_json_reads_as_json_reads_it(value, at, junk) -> None:
    raw = json.dumps(value).encode()
    at = at % (len(raw) + 1)
    _same_as_json(raw[:at] + junk + raw[at:])
    _same_as_json(raw[:at])


def test_a_plain_hook_input_is_read_by_the_scanner_itself() -> None:
    raw = json.dumps({"hook_event_name": "PreToolUse", "tool_input": {"command": "ls é"}})
    assert scanned(raw.encode()) == json.loads(raw)


def _written(function, value, ensure_ascii: bool):
    try:
        return ("text", function(value, ensure_ascii=ensure_ascii))
    except RecursionError:
        return ("error", "RecursionError")
    except Exception as error:
        return ("error", type(error).__name__, str(error))


def _cycle() -> list:
    looped: list = []
    looped.append(looped)
    return looped


def _nested(depth: int) -> list:
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


WRITE_EDGES = [
    None, True, 1, -0.0, 1e400, float("nan"), 0.1, 2**70, "é", "\ud800", "\x00\u2028", "",
    [], {}, {1: "a", None: 2, 1.5: 3, False: 4}, {(1, 2): 3}, {1, 2}, b"x", object(),
    [["a"] * 3, {"b": [1, 2.5]}], ["ls", "-la", "src/é"], _cycle(),
    [[[[[[]]]]]], [[]] * 3, _nested(100_000),
]


@pytest.mark.parametrize("value", WRITE_EDGES, ids=range(len(WRITE_EDGES)))
@pytest.mark.parametrize("ensure_ascii", [True, False])
def test_edge_values_write_as_json_writes_them(value, ensure_ascii: bool) -> None:
    assert _written(dumps, value, ensure_ascii) == _written(json.dumps, value, ensure_ascii)


@settings(max_examples=400, deadline=None)
@given(JSON_VALUES, st.booleans())
def test_generated_values_write_as_json_writes_them(value, ensure_ascii: bool) -> None:
    assert _written(dumps, value, ensure_ascii) == _written(json.dumps, value, ensure_ascii)
