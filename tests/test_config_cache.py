"""The config cache: a warm start builds the config without TOML, a changed file is read again,
and a cache that someone else could have written is never believed."""

from __future__ import annotations

import marshal
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from swarmdeck import cache_settle
from swarmdeck.cache_settle import SETTLE_NS
from swarmdeck.config import default_config, load_config
from swarmdeck.config_cache import CACHE_NAME, cached_config
from swarmdeck.errors import ConfigError
from swarmdeck.sizes import SizeSpec
from waiting import wait_for

G = 1024**3
CONFIG = """\
[memory]
reserve = "3G"
margin = "100M"
cap_factor = 2.0

[hooks]
heavy_patterns = ["^make", "pytest"]

[[hosts]]
name = "box2"
address = "10.0.0.2"
reserve = "10%"
"""


@pytest.fixture
def config_file(isolated_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The config; in this process a cache is believed as soon as it is newer than the file
    (a subprocess waits for the file to settle, see `settled`)."""
    monkeypatch.setattr(cache_settle, "SETTLE_NS", 0)
    path = Path(os.environ["SWARMDECK_CONFIG"])
    path.write_text(CONFIG)
    return path


def settled(path: Path) -> None:
    """Wait until `path` changed longer ago than a cache must be newer than it."""
    status = path.stat()
    changed = max(status.st_mtime_ns, status.st_ctime_ns)
    wait_for(lambda: time.time_ns() > changed + SETTLE_NS, timeout=SETTLE_NS / 1e9 + 30)


def cache_file() -> Path:
    return Path(os.environ["SWARMDECK_STATE_DIR"]) / CACHE_NAME


def poison(reserve: str) -> bytes:
    """The cache as it stands, with memory.reserve changed: what a forged cache would say."""
    stored = marshal.loads(cache_file().read_bytes())
    stored["value"]["sections"]["memory"]["reserve"] = {
        "absolute": SizeSpec.parse(reserve).absolute, "percent": None,
    }
    return marshal.dumps(stored)


def test_cached_config_is_the_loaded_config(config_file: Path) -> None:
    first = cached_config()
    assert cache_file().exists()
    second = cached_config()
    assert first == second == load_config(config_file)
    assert second.sources == load_config(config_file).sources
    assert second.path == str(config_file)
    assert second.memory.reserve == SizeSpec.of_bytes(3 * G)
    assert second.hosts[0].reserve == SizeSpec.of_percent(10)


def test_cache_is_private_to_its_owner(config_file: Path) -> None:
    cached_config()
    status = cache_file().lstat()
    assert status.st_mode & 0o777 == 0o600
    assert status.st_uid == os.geteuid()


def test_warm_start_does_not_parse_toml(config_file: Path) -> None:
    settled(config_file)
    probe = (
        "import sys; from swarmdeck.config_cache import cached_config; c = cached_config(); "
        "print(c.memory.reserve, 'tomllib._parser' in sys.modules)"
    )
    runs = [
        subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
        for _ in range(2)
    ]
    assert runs[0].stdout.split() == ["3G", "True"]
    assert runs[1].stdout.split() == ["3G", "False"]


def test_changed_config_is_parsed_again(config_file: Path) -> None:
    cached_config()
    before = config_file.stat()
    # The same size and mtime: only the change time tells the file was written.
    config_file.write_text(CONFIG.replace('"3G"', '"4G"'))
    os.utime(config_file, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert cached_config().memory.reserve == SizeSpec.of_bytes(4 * G)


def test_replaced_config_is_parsed_again(config_file: Path) -> None:
    cached_config()
    fresh = config_file.with_name("fresh.toml")
    fresh.write_text(CONFIG.replace('"3G"', '"5G"'))
    fresh.replace(config_file)
    assert cached_config().memory.reserve == SizeSpec.of_bytes(5 * G)


def test_a_bad_config_is_refused_every_time_and_never_cached(config_file: Path) -> None:
    cached_config()
    config_file.write_text("[memory]\nreserve = \"lots\"\n")
    for _ in range(2):
        with pytest.raises(ConfigError):
            cached_config()


def test_cache_of_another_user_is_not_believed(config_file: Path) -> None:
    cached_config()
    forged = poison("7G")
    cache_file().write_bytes(forged)
    os.chown(cache_file(), 4242, 4242)
    assert cached_config().memory.reserve == SizeSpec.of_bytes(3 * G)
    # It was replaced by a cache of this user's own.
    assert cache_file().stat().st_uid == os.geteuid()


def test_cache_others_may_read_or_write_is_not_believed(config_file: Path) -> None:
    cached_config()
    forged = poison("7G")
    cache_file().write_bytes(forged)
    cache_file().chmod(0o666)
    assert cached_config().memory.reserve == SizeSpec.of_bytes(3 * G)


def test_cache_that_is_a_link_is_not_followed(config_file: Path, tmp_path: Path) -> None:
    cached_config()
    target = tmp_path / "elsewhere"
    target.write_bytes(poison("7G"))
    target.chmod(0o600)
    cache_file().unlink()
    cache_file().symlink_to(target)
    assert cached_config().memory.reserve == SizeSpec.of_bytes(3 * G)
    assert not cache_file().is_symlink()
    assert marshal.loads(target.read_bytes())["value"]["sections"]["memory"]["reserve"] == {
        "absolute": 7 * G, "percent": None,
    }


def test_damaged_cache_is_read_around(config_file: Path) -> None:
    cached_config()
    cache_file().write_bytes(b"\x00not marshal at all")
    assert cached_config().memory.reserve == SizeSpec.of_bytes(3 * G)


def test_missing_config_gives_the_defaults_without_a_cache(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SWARMDECK_CONFIG")
    assert cached_config() == load_config() == default_config()
    assert not cache_file().exists()


def test_a_config_rewritten_in_the_clock_tick_the_cache_was_written_is_parsed_again(
    config_file: Path,
) -> None:
    # A file system's clock moves in ticks (a jiffy, or a whole second on some): a cache and
    # an in-place rewrite of the same size within one tick leave the key as it was. The cache
    # written then is what the old text said; only its own time tells it may be stale.
    cached_config()
    config_file.write_text(CONFIG.replace('"3G"', '"4G"'))
    changed = config_file.stat()
    stored = marshal.loads(cache_file().read_bytes())
    stored["sources"] = cache_settle.identities(tuple(stored["sources"]))
    cache_file().write_bytes(marshal.dumps(stored))
    os.utime(cache_file(), ns=(changed.st_atime_ns, changed.st_mtime_ns))
    assert cached_config().memory.reserve == SizeSpec.of_bytes(4 * G)
