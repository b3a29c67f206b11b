"""The one rule every file-keyed cache follows (cache_settle.py): believed only while the file
it was built from has the identity the cache holds, once that file had settled, and only when
the cache is this user's own private regular file."""

from __future__ import annotations

import marshal
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

import swarmdeck
from swarmdeck import state
from swarmdeck.errors import StateError
from swarmdeck.state import StateStore, verify


def closed_store_with_rows(path: Path, rows: int) -> None:
    """A real swarmdeck database, checkpointed and closed, so only the main file is left."""
    store = StateStore(path)
    with store.transaction() as conn:
        conn.executemany(
            "INSERT INTO hook_events (event, session_id, payload) VALUES (?, ?, ?)",
            [("PreToolUse", f"s{i % 7}", f'{{"n": {i}, "pad": "{"x" * 400}"}}')
             for i in range(rows)],
        )
    store.close()


def test_a_state_file_damaged_in_the_tick_its_stamp_was_written_is_checked_again(
    tmp_path: Path,
) -> None:
    # The stamp says "this file, as it stands, passed quick_check". A write of the same size in
    # the clock tick the stamp was taken leaves every stat it holds as it was (the change time
    # too). The stamp below is that stamp: it holds the damaged file's identity, and its time
    # is the damage's own tick. Only the stamp's age can tell it may be stale.
    path = tmp_path / "state.db"
    closed_store_with_rows(path, 3000)
    StateStore(path).close()
    size = path.stat().st_size
    with path.open("r+b") as handle:
        handle.seek(size // 3)
        handle.write(os.urandom(64 * 1024))
    damaged = path.stat()
    verify._remember_verified(str(path), damaged)
    stamp = Path(str(path) + state.VERIFIED_SUFFIX)
    os.utime(stamp, ns=(damaged.st_ctime_ns, damaged.st_ctime_ns))

    with pytest.raises(StateError, match="is corrupt"):
        StateStore(path)


def test_a_settled_stamp_spares_the_check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "state.db"
    closed_store_with_rows(path, 10)
    StateStore(path).close()
    stamp = Path(str(path) + state.VERIFIED_SUFFIX)
    later = time.time_ns() + 60 * 10**9
    os.utime(stamp, ns=(later, later))  # written long after the file last changed
    checks: list[int] = []
    monkeypatch.setattr(verify, "quick_check", lambda conn: checks.append(1) or ["ok"])
    StateStore(path).close()
    assert checks == []


def test_a_stamp_of_another_user_is_not_believed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "state.db"
    closed_store_with_rows(path, 10)
    StateStore(path).close()
    stamp = Path(str(path) + state.VERIFIED_SUFFIX)
    later = time.time_ns() + 60 * 10**9
    os.utime(stamp, ns=(later, later))
    os.chown(stamp, 4242, 4242)
    checks: list[int] = []
    monkeypatch.setattr(verify, "quick_check", lambda conn: checks.append(1) or ["ok"])
    StateStore(path).close()
    assert checks == [1]


HOOK_DEFAULT = (
    "from swarmdeck.hooks.settings import hook_settings; print(hook_settings().heavy[0])"
)
CONFIG_DEFAULT = (
    "from swarmdeck.config_cache import cached_config; print(cached_config().hooks.heavy[0])"
)


@pytest.mark.parametrize("probe", [HOOK_DEFAULT, CONFIG_DEFAULT], ids=["hook", "config"])
def test_a_cache_is_rebuilt_when_the_code_that_gives_its_defaults_changes(
    isolated_home: Path, tmp_path: Path, probe: str
) -> None:
    # The default heavy list lives in hooks/heavy.py, not beside the config's schema: a cache
    # keyed on the schema's file alone keeps serving the old list after an upgrade that edits
    # it (the version may stay the same in a checkout). The caches here are settled, so only
    # what they record of the code can tell them stale.
    source = tmp_path / "src"
    shutil.copytree(Path(swarmdeck.__file__).parent, source / "swarmdeck",
                    ignore=shutil.ignore_patterns("__pycache__"))
    env = {**os.environ, "PYTHONPATH": str(source), "PYTHONDONTWRITEBYTECODE": "1"}

    def default_program() -> str:
        done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                              env=env, timeout=60, check=True)
        return done.stdout.strip()

    assert default_program() == "pytest"
    state_dir = Path(os.environ["SWARMDECK_STATE_DIR"])
    (cache,) = [item for item in state_dir.iterdir() if "cache" in item.name or "settings" in
                item.name]
    later = time.time_ns() + 60 * 10**9
    os.utime(cache, ns=(later, later))
    heavy = source / "swarmdeck" / "hooks" / "heavy.py"
    heavy.write_text(heavy.read_text().replace('"pytest", "py.test",', '"slowtest", "py.test",'))
    assert default_program() == "slowtest"


def test_hook_settings_another_user_wrote_are_not_believed(isolated_home: Path) -> None:
    # The settings say which guards deny: a cache someone else wrote could switch them off.
    from swarmdeck.hooks.settings import CACHE_NAME, hook_settings

    assert hook_settings().max_running_subagents == 0
    cache = Path(os.environ["SWARMDECK_STATE_DIR"]) / CACHE_NAME
    stored = marshal.loads(cache.read_bytes())
    stored["value"]["max_running_subagents"] = 99
    cache.write_bytes(marshal.dumps(stored))
    later = time.time_ns() + 60 * 10**9
    os.utime(cache, ns=(later, later))
    assert hook_settings().max_running_subagents == 99  # a settled cache of one's own: believed
    os.chown(cache, 4242, 4242)
    assert hook_settings().max_running_subagents == 0
    assert cache.stat().st_uid == os.geteuid()
