"""The effective config kept in the state folder between changes of the config file.

Every command but `hook` starts by loading the config, `swarmdeck run` before every caged
command. Parsing the TOML imports tomllib (which pulls typing and string) and runs the whole
schema's checks: several milliseconds of a start that should cost little more than the
interpreter. So the config that `config.load_config` built is written here with `marshal` and
read back while the file is the one it was built from: the same path, device, inode, size,
mtime and change time (a write that keeps size and mtime still moves the change time), and the
same swarmdeck, schema (config.py) and size reader (sizes.py); and the cache was written after
the file settled (cache_settle.py), so no rewrite within the same clock tick hides behind an
unchanged key. Anything else, and any doubt, means loading the file again: the cache holds
nothing the config does not say.

`marshal` trusts its input, so the cache is believed only when it is a regular file of this
user's, not a link, that no one else may read or write (0600), as the state folder's other
files are; one that is not is read around and replaced.
"""

from __future__ import annotations

import marshal
import os
import stat

from swarmdeck import __version__, paths
from swarmdeck.cache_settle import settled
from swarmdeck.records import fields

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from swarmdeck.config import Config

CACHE_NAME = "config.cache"
CACHE_FORMAT = 1
MAX_CACHE = 4 * 1024 * 1024
"""A cache larger than this is not read: a config is at most 1 MiB of TOML."""
_PLAIN = (str, int, float, bool, type(None))


def cached_config() -> Config:
    """The config `config.load_config()` gives, from the cache when the file is unchanged."""
    from swarmdeck import config as schema
    from swarmdeck import sizes

    config_path = paths.config_path_text()
    readers = (schema.__file__, sizes.__file__)
    key = _key(config_path, readers)
    if key is None:
        # No file (the defaults, which cost nothing to build), or one that cannot be read:
        # loading it says which, as it always has.
        return schema.load_config(config_path)
    cache = os.path.join(paths.state_dir_text(), CACHE_NAME)
    config = _read(cache, key)
    if config is not None:
        return config
    config = schema.load_config(config_path)
    if _key(config_path, readers) == key:
        # Written only when the file did not change while it was read.
        _write(cache, key, config)
    return config


def _key(config_path: str, readers: tuple[str, ...]) -> tuple[Any, ...] | None:
    """What a cached config was built from: the file, and the modules that read it (the
    schema, the sizes); None when the config file cannot be looked at."""
    try:
        status = os.stat(config_path)
        code = [os.stat(reader) for reader in readers]
    except OSError:
        return None
    return (
        CACHE_FORMAT,
        __version__,
        config_path,
        (status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns, status.st_ctime_ns),
        tuple((st.st_ino, st.st_size, st.st_mtime_ns) for st in code),
    )


def _read(cache: str, key: tuple[Any, ...]) -> Config | None:
    """The cached config when the cache is this user's own and was built from `key`."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(cache, flags)
    except OSError:
        # Missing, or a link (O_NOFOLLOW refuses it): built again and written below.
        return None
    try:
        status = os.fstat(fd)
        if (
            not stat.S_ISREG(status.st_mode)
            or status.st_uid != os.geteuid()
            or status.st_mode & 0o077
            or status.st_size > MAX_CACHE
            or not settled(status.st_mtime_ns, *key[3][3:])
        ):
            return None
        data = os.read(fd, MAX_CACHE + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    try:
        stored = marshal.loads(data)
        if not isinstance(stored, dict) or stored.get("key") != key:
            return None
        return _decode(stored["config"])
    except (EOFError, ValueError, TypeError, KeyError, AttributeError):
        # A damaged or foreign-shaped cache: the config is loaded from its file instead.
        return None


def _write(cache: str, key: tuple[Any, ...], config: Config) -> None:
    """Replace the cache in one rename; a start that cannot write it is only slower next time."""
    from swarmdeck.errors import StateError
    from swarmdeck.regular_files import replace_private

    try:
        encoded = marshal.dumps({"key": key, "config": _encode(config)})
    except (TypeError, ValueError):
        # A value the cache cannot hold (a new kind of key): every start loads the file.
        return
    try:
        paths.private_dir(os.path.dirname(cache))
        replace_private(cache, encoded)
    except (OSError, StateError):
        # The state folder refuses it; the store opened next reports why, if it matters.
        return


def _encode(config: Config) -> dict[str, Any]:
    from swarmdeck.config import SECTIONS

    return {
        "sections": {name: _values(getattr(config, name)) for name in SECTIONS},
        "hosts": [_values(host) for host in config.hosts],
        "path": None if config.path is None else str(config.path),
        "sources": dict(config.sources),
    }


def _values(section: Any) -> dict[str, Any]:
    """A section's keys as marshal keeps them: a size as a dict of its two fields, the rest
    as they are; any other kind of value is refused (TypeError), so it is never cached."""
    from swarmdeck.sizes import SizeSpec

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


def _decode(stored: dict[str, Any]) -> Config:
    from swarmdeck.config import SECTIONS, Config, HostConfig
    from swarmdeck.records import MappingProxyType

    sections = {name: _section(cls, stored["sections"][name]) for name, cls in SECTIONS.items()}
    return Config(
        **sections,
        hosts=tuple(_section(HostConfig, host) for host in stored["hosts"]),
        path=stored["path"],
        sources=MappingProxyType(dict(stored["sources"])),
    )


def _section(cls: type, values: dict[str, Any]) -> Any:
    from swarmdeck.sizes import SizeSpec

    return cls(
        **{
            name: SizeSpec(**value) if isinstance(value, dict) else value
            for name, value in values.items()
        }
    )
