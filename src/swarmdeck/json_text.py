"""`json.loads` and `json.dumps` without the import time of the json package, for the paths
that start a process per call: the hooks (their input and caches) and `swarmdeck run` (a job's
argv, the slice owner's record, the fingerprint's text).

json parses and writes with the C scanner and encoder of `_json`, but importing json also
imports re and enum, which costs a light hook most of its budget and every caged run a
millisecond and a half. `loads` drives that same scanner with the settings of json's default
decoder. Whatever it does not plainly accept (bytes json would not read as UTF-8, any error, a
value nested past the recursion limit, data after the value) goes to `json.loads` itself, so
every input gets json's own answer: the same value, or the same exception. `dumps` drives the C
encoder with the settings of json's default encoder, and leaves any failure (a value json
cannot write, a cycle, nesting past the recursion limit) to `json.dumps` the same way.
"""

from __future__ import annotations

from _json import encode_basestring, encode_basestring_ascii, make_encoder, make_scanner

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

WHITESPACE = " \t\n\r"
"""JSON's whitespace: what json skips around the value (its pattern `[ \\t\\n\\r]*`)."""
_NOT_UTF8 = (b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")
"""Byte-order marks: json reads such input as UTF-8-sig, UTF-16 or UTF-32."""
REFUSED = object()
"""What `scanned` answers for input it leaves to json."""


class _DefaultDecoder:
    """The settings `json.JSONDecoder()` gives the scanner (see json/decoder.py)."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = {
        "-Infinity": float("-inf"),
        "Infinity": float("inf"),
        "NaN": float("nan"),
    }.__getitem__


_scan = make_scanner(_DefaultDecoder())


def scanned(raw: bytes | str) -> Any:
    """The value of `raw` when it is plain UTF-8 JSON (or text) the scanner reads whole, else
    REFUSED."""
    if isinstance(raw, str):
        text = raw
    # json.detect_encoding: a mark, or a zero among the first bytes, means another encoding.
    elif raw.startswith(_NOT_UTF8) or 0 in raw[:2]:
        return REFUSED
    try:
        if not isinstance(raw, str):
            text = raw.decode("utf-8", "surrogatepass")
        value, end = _scan(text, len(text) - len(text.lstrip(WHITESPACE)))
    except Exception:  # any failure: json.loads says what it is, see loads
        return REFUSED
    if text[end:].lstrip(WHITESPACE):
        return REFUSED
    return value


def loads(raw: bytes | str) -> Any:
    """`json.loads(raw)`: its value, or the exception it raises."""
    value = scanned(raw)
    if value is REFUSED:
        import json

        return json.loads(raw)
    return value


def _unwritable(value: object) -> object:
    """json's default `default`: what the encoder calls for a value it has no form for."""
    raise TypeError(f"Object of type {value.__class__.__name__} is not JSON serializable")


def _encoder(ensure_ascii: bool) -> Any:
    """The C encoder with the settings of `json.JSONEncoder(ensure_ascii=...)` (json/encoder.py):
    circular check on, NaN allowed, separators ", " and ": ", keys unsorted, none skipped."""
    strings = encode_basestring_ascii if ensure_ascii else encode_basestring
    return make_encoder({}, _unwritable, strings, None, ": ", ", ", False, False, True)


def dumps(value: Any, ensure_ascii: bool = True) -> str:
    """`json.dumps(value, ensure_ascii=ensure_ascii)`: its text, or the exception it raises."""
    try:
        return "".join(_encoder(ensure_ascii)(value, 0))
    except Exception:  # any failure: json.dumps says what it is
        import json

        return json.dumps(value, ensure_ascii=ensure_ascii)
