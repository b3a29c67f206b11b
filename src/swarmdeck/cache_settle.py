"""One rule for every cache kept beside the state: believed only when provably current.

A cache (the config cache, the hooks' settings, the state file's verified stamp) records the
identity of each file it was built from (device, inode, size, mtime, change time), taken
before the build. It is believed when each file still has that identity, when it was written
more than SETTLE_NS after each of them last changed (file times move in ticks, and a same-size
rewrite within one leaves every stat as it was), and when it is a regular file of this user's,
not a link, that no one else may read or write (marshal trusts its input); else it is rebuilt.
The light hook path imports this module: it imports nothing that path does not already have.
"""

from __future__ import annotations

import marshal
import os
import stat

SETTLE_NS = 2_000_000_000
"""How long after its sources last changed a cache must have been written to be believed."""
MAX_CACHE = 4 * 1024 * 1024
"""A cache larger than this is not read: each holds at most a config's worth of values."""
_OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC

Identity = tuple[int, int, int, int, int]
"""A file as a cache key holds it: device, inode, size, mtime and change time (ns)."""


def identity_of(status: os.stat_result) -> Identity:
    """The identity of the file `status` describes. The change time is in it: a rewrite that
    keeps size and mtime (`cp -p`, `os.utime`) still moves it, and no one can set it back."""
    return (status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns, status.st_ctime_ns)


def identity(path: str) -> Identity | None:
    """The identity of the file at `path`; None when it cannot be looked at."""
    try:
        return identity_of(os.stat(path))
    except OSError:
        return None


def identities(paths: tuple[str, ...]) -> dict[str, Identity | None]:
    """Each file's identity, None for one that cannot be looked at: what a value built from
    them is recorded with, taken before it is built."""
    return {path: identity(path) for path in paths}


def settled(cache_mtime_ns: int, sources: tuple[Identity | None, ...]) -> bool:
    """Whether a cache written at `cache_mtime_ns` postdates every change of its sources (their
    identities, None for a missing one) by more than SETTLE_NS, so that no rewrite within one
    tick can hide behind them."""
    changed = max((max(ident[3], ident[4]) for ident in sources if ident is not None), default=0)
    return cache_mtime_ns > changed + SETTLE_NS


def read_cache(cache: str, key: object) -> object | None:
    """The value stored at `cache` for `key`, or None when it may not be believed: missing,
    not this user's private regular file, for another key, built from files that have changed
    since, or written before they settled."""
    loaded = _load(cache)
    if loaded is None:
        return None
    stored, written = loaded
    sources = stored.get("sources")
    if stored.get("key") != key or not isinstance(sources, dict):
        return None
    if any(identity(path) != recorded for path, recorded in sources.items()):
        return None
    return stored.get("value") if settled(written, tuple(sources.values())) else None


def write_cache(
    cache: str, key: object, sources: dict[str, Identity | None], value: object
) -> None:
    """Keep `value`, built for `key` from files whose identities were `sources` before it was
    built, unless one of them changed meanwhile: replaced in one rename, 0600. A cache that
    cannot be written costs the next start time, never correctness."""
    if identities(tuple(sources)) != sources:
        return
    _store(cache, {"key": key, "sources": sources, "value": value})


def stamp_holds(stamp: str, path: str, status: os.stat_result) -> bool:
    """Whether the stamp says the file at `path`, whose `status` is in hand, passed a check as
    it stands now (the state file's quick_check): a stamp is a cache of one yes."""
    loaded = _load(stamp)
    if loaded is None:
        return False
    stored, written = loaded
    current = identity_of(status)
    return (
        stored.get("sources") == {path: current}
        and stored.get("value") is True
        and settled(written, (current,))
    )


def write_stamp(stamp: str, path: str, status: os.stat_result) -> None:
    """Record that the file at `path`, as `status` (taken before its check) shows it, passed."""
    _store(stamp, {"key": "stamp", "sources": {path: identity_of(status)}, "value": True})


def _load(cache: str) -> tuple[dict[str, object], int] | None:
    """What the cache holds and when it was written, when it is this user's own private
    regular file, not a link, of a readable size and format; None otherwise."""
    try:
        fd = os.open(cache, _OPEN_FLAGS)
    except OSError:
        return None  # missing, or a link (O_NOFOLLOW refuses it): built again by the caller
    try:
        status = os.fstat(fd)
        if (
            not stat.S_ISREG(status.st_mode)
            or status.st_uid != os.geteuid()
            or status.st_mode & 0o077
            or status.st_size > MAX_CACHE
        ):
            return None
        data = os.read(fd, MAX_CACHE + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    try:
        stored = marshal.loads(data)
    except (EOFError, ValueError, TypeError):
        return None  # damaged, or another format: built again by the caller
    return (stored, status.st_mtime_ns) if isinstance(stored, dict) else None


def _store(cache: str, stored: dict[str, object]) -> None:
    from swarmdeck.regular_files import replace_private

    try:
        encoded = marshal.dumps(stored)
    except ValueError:
        return  # a value marshal cannot hold: every start builds it
    try:
        replace_private(cache, encoded)
    except OSError:
        return  # the folder refuses it; the value in hand is correct either way
