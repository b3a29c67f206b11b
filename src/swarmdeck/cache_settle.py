"""When a cache keyed by its source file's stat may be believed: once the file has settled.

File times move in ticks (a jiffy; a whole second, or two, on some file systems): a rewrite
of the same size within the tick a cache was written in leaves every stat a key can hold as it
was (size, mtime, change time). A cache written `SETTLE_NS` after its source last changed
cannot be older than the text it holds. The config cache (config_cache.py) and the hooks'
settings cache (hooks/settings.py) both follow this one rule; the light hook path imports this
module, so it imports nothing.
"""

from __future__ import annotations

SETTLE_NS = 2_000_000_000
"""How long after its source last changed a cache must have been written to be believed."""


def settled(cache_mtime_ns: int, source_mtime_ns: int, source_ctime_ns: int) -> bool:
    """Whether a cache written at `cache_mtime_ns` postdates every rewrite of its source whose
    times it holds: written more than SETTLE_NS after the source's last change."""
    return cache_mtime_ns > max(source_mtime_ns, source_ctime_ns) + SETTLE_NS
