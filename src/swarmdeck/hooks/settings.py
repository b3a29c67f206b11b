"""The few config values a hook needs, cached beside the state database so the light path is fast.

Loading the config module and building its schema costs several times a hook's whole budget for
a light command. The hook needs only the heavy list and patterns (with their necessary literals,
see prefilter.py), the guards' modes and facts, and the subagent limit, so those are kept in
`hook-settings.cache` under the one cache rule (cache_settle.py): recorded with the identity of
the config file and of every module they were computed by, believed while those are unchanged
and settled. Any change reloads through `config.load_config`, the one reader of the config: the
cache holds nothing the config does not say.
"""

from __future__ import annotations

import os

from swarmdeck import __version__, paths
from swarmdeck.cache_settle import identities, read_cache, write_cache

CACHE_NAME = "hook-settings.cache"
CACHE_FORMAT = 3


class HookSettings:
    """What the hooks take from the config (a plain class: dataclasses would add their import,
    and inspect's, to the light path)."""

    __slots__ = ("guards", "heavy", "heavy_patterns", "literals", "max_running_subagents")

    def __init__(
        self,
        heavy_patterns: tuple[str, ...],
        literals: tuple[tuple[str, ...] | None, ...],
        max_running_subagents: int,
        heavy: tuple[str, ...] = (),
        guards: dict[str, object] | None = None,
    ) -> None:
        self.heavy = heavy
        """`hooks.heavy`: the readable list of heavy work (hooks/heavy.py)."""
        self.guards = guards if guards is not None else {}
        """Each guard's mode and the facts the guards check against (hooks/guards.py)."""
        self.heavy_patterns = heavy_patterns
        self.literals = literals
        """Per pattern, strings one of which a matching command must hold (None: always test)."""
        self.max_running_subagents = max_running_subagents

    def __eq__(self, other: object) -> bool:
        return isinstance(other, HookSettings) and self.to_plain() == other.to_plain()

    __hash__ = None  # type: ignore[assignment]

    def to_plain(self) -> dict[str, object]:
        """The settings as the cache keeps them (lists, dicts, strings and numbers)."""
        return {
            "heavy_patterns": list(self.heavy_patterns),
            "literals": [list(lits) if lits is not None else None for lits in self.literals],
            "max_running_subagents": self.max_running_subagents,
            "heavy": list(self.heavy),
            "guards": self.guards,
        }

    @classmethod
    def from_plain(cls, data: dict[str, object]) -> HookSettings:
        """Settings read back from `to_plain`'s form; ValueError when the shape is wrong."""
        patterns = data["heavy_patterns"]
        literals = data["literals"]
        limit = data["max_running_subagents"]
        heavy = data["heavy"]
        guards = data["guards"]
        if (
            not isinstance(heavy, list)
            or not all(isinstance(h, str) for h in heavy)
            or not isinstance(guards, dict)
        ):
            raise ValueError("hook settings cache has the wrong shape")
        if (
            not isinstance(patterns, list)
            or not isinstance(literals, list)
            or len(patterns) != len(literals)
            or not isinstance(limit, int)
            or not all(isinstance(p, str) for p in patterns)
        ):
            raise ValueError("hook settings cache has the wrong shape")
        return cls(
            heavy_patterns=tuple(patterns),
            literals=tuple(
                tuple(str(x) for x in lits) if isinstance(lits, list) else None for lits in literals
            ),
            max_running_subagents=limit,
            heavy=tuple(heavy),
            guards=guards,
        )


def hook_settings() -> HookSettings:
    """The settings from the cache when it is current, else from the config (and cached)."""
    config_path = paths.config_path()
    key = (CACHE_FORMAT, __version__, config_path)
    cache = os.path.join(paths.state_dir(), CACHE_NAME)
    stored = read_cache(cache, key)
    if isinstance(stored, dict):
        try:
            return HookSettings.from_plain(stored)
        except (ValueError, KeyError, TypeError):
            pass  # a damaged or foreign-shaped cache is recomputed from the config below
    sources = identities((config_path, *settings_readers()))
    settings = settings_from_config(config_path)
    try:
        os.makedirs(os.path.dirname(cache), exist_ok=True)
    except OSError:
        return settings  # the cache only saves time; the settings in hand are correct either way
    write_cache(cache, key, sources, settings.to_plain())
    return settings


def settings_readers() -> tuple[str, ...]:
    """The modules whose text decides the settings a config gives: the config's own readers,
    the guards' table (each preset's modes), the literals' finder and this module."""
    from swarmdeck.config import config_readers
    from swarmdeck.hooks import guard_table, prefilter

    return (*config_readers(), guard_table.__file__ or "", prefilter.__file__ or "", __file__)


def settings_from_config(config_path: str) -> HookSettings:
    """Load the config (the slow, authoritative way) and work out the patterns' literals."""
    from swarmdeck.config import load_config
    from swarmdeck.hooks.guard_table import guard_settings
    from swarmdeck.hooks.prefilter import necessary_literals

    config = load_config(config_path)
    patterns = tuple(config.hooks.heavy_patterns)
    return HookSettings(
        heavy_patterns=patterns,
        literals=tuple(necessary_literals(p) for p in patterns),
        max_running_subagents=config.hooks.max_running_subagents,
        heavy=tuple(config.hooks.heavy),
        guards=guard_settings(config),
    )
