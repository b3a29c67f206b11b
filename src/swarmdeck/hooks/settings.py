"""The few config values a hook needs, cached beside the state database so the light path is fast.

Loading the config module and building its schema costs several times a hook's whole budget for
a light command. The hook needs only the heavy-command patterns (with their necessary literals,
see prefilter.py) and the subagent limit, so those are written to `hook-settings.json` once and
reused while the config file, the config module and the swarmdeck version are the ones they were
computed from, and the cache was written after the config file settled (cache_settle.py, the
rule the config cache follows too). Any change to those reloads through `config.load_config`,
the one reader of the config: the cache holds nothing the config does not say.
"""

from __future__ import annotations

import os

from swarmdeck import __version__, paths
from swarmdeck.cache_settle import settled
from swarmdeck.json_text import loads

# The light path does without typing's import time (see cli.py).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

CACHE_NAME = "hook-settings.json"
CACHE_FORMAT = 2
MAX_CACHE = 4 * 1024 * 1024
"""A cache larger than this is not read (it holds the patterns, well under the config's limit)."""


class HookSettings:
    """What the hooks take from the config (a plain class: dataclasses cost the light path)."""

    __slots__ = ("guards", "heavy", "heavy_patterns", "literals", "max_running_subagents")

    def __init__(
        self,
        heavy_patterns: tuple[str, ...],
        literals: tuple[tuple[str, ...] | None, ...],
        max_running_subagents: int,
        heavy: tuple[str, ...] = (),
        guards: dict[str, Any] | None = None,
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
        return isinstance(other, HookSettings) and self.to_json() == other.to_json()

    __hash__ = None  # type: ignore[assignment]

    def to_json(self) -> dict[str, Any]:
        return {
            "heavy_patterns": list(self.heavy_patterns),
            "literals": [list(lits) if lits is not None else None for lits in self.literals],
            "max_running_subagents": self.max_running_subagents,
            "heavy": list(self.heavy),
            "guards": self.guards,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> HookSettings:
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


SCHEMA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "config.py")
"""config.py: its defaults are part of what the cache was computed from."""


def cache_key(config_path: str) -> dict[str, Any]:
    """What the cached values were computed from: when any of it changes they are recomputed."""
    return {
        "format": CACHE_FORMAT,
        "version": __version__,
        "config": config_path,
        "config_stat": _stat(config_path),
        "schema_stat": _stat(SCHEMA),
    }


def hook_settings() -> HookSettings:
    """The settings from the cache when it is current, else from the config (and cached)."""
    config_path = paths.config_path_text()
    key = cache_key(config_path)
    cache = os.path.join(paths.state_dir_text(), CACHE_NAME)
    cached = _read_cache(cache, key)
    if cached is not None:
        return cached
    settings = settings_from_config(config_path)
    if cache_key(config_path) == key:
        # Written only when the file did not change while it was read.
        _write_cache(cache, key, settings)
    return settings


def settings_from_config(config_path: str) -> HookSettings:
    """Load the config (the slow, authoritative way) and work out the patterns' literals."""
    from pathlib import Path

    from swarmdeck.config import load_config
    from swarmdeck.hooks.guard_table import guard_settings
    from swarmdeck.hooks.prefilter import necessary_literals

    config = load_config(Path(config_path))
    patterns = tuple(config.hooks.heavy_patterns)
    return HookSettings(
        heavy_patterns=patterns,
        literals=tuple(necessary_literals(p) for p in patterns),
        max_running_subagents=config.hooks.max_running_subagents,
        heavy=tuple(config.hooks.heavy),
        guards=guard_settings(config),
    )


def _stat(path: str) -> list[int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    # The change time too: a rewrite that keeps size and mtime (`cp -p`, an edit within the
    # clock's tick) still moves it, and no one can set it back.
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def _read_cache(cache: str, key: dict[str, Any]) -> HookSettings | None:
    """The cached settings when the cache was built from `key` once the config had settled."""
    from swarmdeck.regular_files import open_regular

    try:
        fd = open_regular(cache)
        try:
            written = os.fstat(fd)
            config = key["config_stat"]
            if written.st_size > MAX_CACHE or (
                config is not None and not settled(written.st_mtime_ns, config[3], config[4])
            ):
                return None
            data = loads(os.read(fd, MAX_CACHE + 1))
        finally:
            os.close(fd)
        if not isinstance(data, dict) or data.get("key") != key:
            return None
        return HookSettings.from_json(data["settings"])
    except (OSError, ValueError, KeyError, TypeError):
        # A missing, stale or damaged cache is recomputed from the config below.
        return None


def _write_cache(cache: str, key: dict[str, Any], settings: HookSettings) -> None:
    """Write atomically; a hook that cannot write its cache still answers, only slower next time."""
    import json

    from swarmdeck.regular_files import replace_private

    try:
        os.makedirs(os.path.dirname(cache), exist_ok=True)
        replace_private(cache, json.dumps({"key": key, "settings": settings.to_json()}).encode())
    except OSError:
        # The cache only saves time; the settings in hand are correct either way.
        return
