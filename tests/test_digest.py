"""The run path's SHA-256 keys are hashlib's, digit for digit: learned peaks and slice records
keyed before stay found."""

import hashlib

from hypothesis import given
from hypothesis import strategies as st

from swarmdeck.digest import short_sha256


@given(st.text())
def test_short_sha256_is_hashlib_s(text: str) -> None:
    assert short_sha256(text) == hashlib.sha256(text.encode()).hexdigest()[:16]
