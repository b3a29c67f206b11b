"""Short SHA-256 keys of text (workload fingerprints, slice records) for the run path.

hashlib loads OpenSSL's libcrypto to offer every algorithm, 3 ms of every caged run; the run
path needs SHA-256 alone, which CPython also builds in (the module hashlib itself falls back
to), and which gives the same digest.
"""

from __future__ import annotations

try:
    from _sha256 import sha256  # CPython 3.11
except ImportError:
    try:
        from _sha2 import sha256  # CPython 3.12 and later
    except ImportError:
        from hashlib import sha256


def short_sha256(text: str) -> str:
    """The first 16 hex digits of the SHA-256 of `text` (UTF-8)."""
    return sha256(text.encode()).hexdigest()[:16]
