"""A set of strings that holds eight bytes for each: what a reader must remember for as long as
the control room follows a session (its retired subagents' file names, every message id its
transcripts counted) grows with the session's length, and a set of the strings themselves
keeps each string and a slot for it: about a hundred bytes an entry. A 64-bit digest in a
sorted array keeps the answer; two strings share a digest once in about 10^19 pairs."""

from __future__ import annotations

from array import array
from bisect import bisect_left
from hashlib import blake2b


class DigestSet:
    """Strings added, remembered by their 8-byte digests, kept sorted for a binary search."""

    __slots__ = ("_digests",)

    def __init__(self) -> None:
        self._digests = array("Q")

    @staticmethod
    def _digest(text: str) -> int:
        return int.from_bytes(blake2b(text.encode(), digest_size=8).digest(), "little")

    def add(self, text: str) -> None:
        digest = self._digest(text)
        at = bisect_left(self._digests, digest)
        if at == len(self._digests) or self._digests[at] != digest:
            self._digests.insert(at, digest)

    def __contains__(self, text: object) -> bool:
        if not isinstance(text, str):
            return False
        digest = self._digest(text)
        at = bisect_left(self._digests, digest)
        return at < len(self._digests) and self._digests[at] == digest
