"""`json.loads` for the hook's input and caches, without the import time of the json package.

json parses with the C scanner of `_json`, but importing json also imports re and enum, which
costs a light hook most of its budget. `loads` drives that same scanner with the settings of
json's default decoder. Whatever it does not plainly accept (text json would not read as UTF-8,
any error, a value nested past the recursion limit, data after the value) goes to `json.loads`
itself, so every input gets json's own answer: the same value, or the same exception.
"""

from __future__ import annotations

from _json import make_scanner

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


def scanned(raw: bytes) -> Any:
    """The value of `raw` when it is plain UTF-8 JSON the scanner reads whole, else REFUSED."""
    # json.detect_encoding: a mark, or a zero among the first bytes, means another encoding.
    if raw.startswith(_NOT_UTF8) or 0 in raw[:2]:
        return REFUSED
    try:
        text = raw.decode("utf-8", "surrogatepass")
        value, end = _scan(text, len(text) - len(text.lstrip(WHITESPACE)))
    except Exception:  # any failure: json.loads says what it is, see loads
        return REFUSED
    if text[end:].lstrip(WHITESPACE):
        return REFUSED
    return value


def loads(raw: bytes) -> Any:
    """`json.loads(raw)`: its value, or the exception it raises."""
    value = scanned(raw)
    if value is REFUSED:
        import json

        return json.loads(raw)
    return value
