"""The effective config kept in the state folder between changes of the config file.

Every command but `hook` starts by loading the config, `swarmdeck run` before every caged
command, and parsing the TOML and running the schema's checks is most of such a start's own
cost. So the config `load_config` built is kept (marshal) and read back under the one cache
rule (cache_settle.py), keyed on the config file and on every module that decides what it gives
(config_readers): any change, and any doubt, means loading the file again, so the cache holds
nothing the config does not say.
"""

from __future__ import annotations

import os
from dataclasses import fields
from types import MappingProxyType
from typing import Any

from swarmdeck import __version__, paths
from swarmdeck.cache_settle import identities, read_cache, write_cache
from swarmdeck.config import SECTIONS, Config, HostConfig, config_readers, load_config
from swarmdeck.errors import StateError
from swarmdeck.sizes import SizeSpec

CACHE_NAME = "config.cache"
CACHE_FORMAT = 2
_PLAIN = (str, int, float, bool, type(None))


def cached_config() -> Config:
    """The config `load_config()` gives, from the cache while the file and its readers are
    unchanged."""
    config_path = paths.config_path()
    sources = identities((config_path, *config_readers()))
    if sources[config_path] is None:
        # No file (the defaults, which cost nothing to build), or one that cannot be looked
        # at: loading it says which, as it always has.
        return load_config(config_path)
    key = (CACHE_FORMAT, __version__, config_path)
    cache = os.path.join(paths.state_dir(), CACHE_NAME)
    stored = read_cache(cache, key)
    if stored is not None:
        try:
            return _decode(stored)
        except (ValueError, TypeError, KeyError, AttributeError):
            pass  # a foreign-shaped cache: the config is loaded from its file instead
    config = load_config(config_path)
    try:
        value = _encode(config)
        paths.private_dir(os.path.dirname(cache))
    except (TypeError, StateError):
        # A value the cache cannot hold, or a state folder that refuses it (the store opened
        # next says why, if it matters): this start was only slower.
        return config
    write_cache(cache, key, sources, value)
    return config


def _encode(config: Config) -> dict[str, Any]:
    return {
        "sections": {name: _values(getattr(config, name)) for name in SECTIONS},
        "hosts": [_values(host) for host in config.hosts],
        "path": None if config.path is None else str(config.path),
        "sources": dict(config.sources),
    }


def _values(section: Any) -> dict[str, Any]:
    """A section's keys as marshal keeps them: a size as a dict of its two fields, the rest
    as they are; any other kind of value is refused (TypeError), so it is never cached."""
    out: dict[str, Any] = {}
    for item in fields(section):
        value = getattr(section, item.name)
        if isinstance(value, SizeSpec):
            value = {"absolute": value.absolute, "percent": value.percent}
        elif isinstance(value, tuple):
            if not all(isinstance(part, str) for part in value):
                raise TypeError(f"{item.name}: only tuples of strings are cached")
        elif not isinstance(value, _PLAIN):
            raise TypeError(f"{item.name}: a {type(value).__name__} is not cached")
        out[item.name] = value
    return out


def _decode(stored: Any) -> Config:
    sections = {name: _section(cls, stored["sections"][name]) for name, cls in SECTIONS.items()}
    return Config(
        **sections,
        hosts=tuple(_section(HostConfig, host) for host in stored["hosts"]),
        path=stored["path"],
        sources=MappingProxyType(dict(stored["sources"])),
    )


def _section(cls: type, values: dict[str, Any]) -> Any:
    return cls(
        **{
            name: SizeSpec(**value) if isinstance(value, dict) else value
            for name, value in values.items()
        }
    )
