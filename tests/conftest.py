"""Shared fixtures: every test gets its own state, config and Claude Code folders in tmp_path;
and the run as a whole must leave the machine's kernel log as it found it."""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from kernel_log import machine_records, written_by_tests
from own_slice import slice_in_config
from swarmdeck import paths
from swarmdeck.probes.cgroups import DEFAULT_SLICE_NAME, read_hierarchies

_KERNEL_MARK = pytest.StashKey[int | None]()
_ABSENT_PLACES = pytest.StashKey[list[Path]]()


def machine_places() -> list[Path]:
    """What swarmdeck makes machine-wide by default: the cgroup v1 slice a first run makes and
    the folder of slice owners' records. Tests name their own, in their config and environment."""
    places = [Path(paths.run_dir())]
    v1_memory = read_hierarchies().v1_memory
    if v1_memory is not None:
        places.append(Path(v1_memory) / DEFAULT_SLICE_NAME)
    return places


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point every path swarmdeck reads or writes into this test's own folder."""
    monkeypatch.setenv("SWARMDECK_STATE_DIR", str(tmp_path / "state"))
    # An empty file, the defaults: a config SWARMDECK_CONFIG names must exist.
    (tmp_path / "config.toml").touch()
    monkeypatch.setenv("SWARMDECK_CONFIG", str(tmp_path / "config.toml"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg-state"))
    monkeypatch.setenv("SWARMDECK_RUN_DIR", str(tmp_path / "run"))
    return tmp_path


@pytest.fixture
def own_slice(isolated_home: Path) -> Iterator[Path]:
    """A cgroup v1 slice of this test's own in its config: its caged runs (a job books 16M of
    256M) never make or fill the machine's default slice."""
    with slice_in_config(isolated_home / "config.toml") as path:
        yield path


_cgroup_names = itertools.count(1000)


def _kill_and_remove(cgroup: Path) -> None:
    """Kill what a test cgroup holds and remove it, deepest first; raise if it stays."""
    for directory in sorted((p for p in cgroup.rglob("*") if p.is_dir()), reverse=True):
        _kill_and_remove(directory)
    for _ in range(250):
        if not cgroup.exists():
            return
        for pid in (cgroup / "cgroup.procs").read_text().split():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), signal.SIGKILL)
        try:
            cgroup.rmdir()
            return
        except OSError:
            time.sleep(0.02)
    cgroup.rmdir()


@pytest.fixture
def v1_cgroups() -> Iterator[Callable[[], Path]]:
    """Makes empty cgroup v1 memory cgroups of this test's own (swarmdeck-test-PID-N at the
    hierarchy's root; cgroup v2 ones on a v2 host, as in the guest of `make test-v2`); whatever
    they hold is killed and they are removed afterwards."""
    from cagekit import slice_root

    root = slice_root()
    made: list[Path] = []

    def make() -> Path:
        path = root / f"swarmdeck-test-{os.getpid()}-{next(_cgroup_names)}"
        if path.exists():
            _kill_and_remove(path)  # left by a killed earlier run that had this pid
        path.mkdir()
        made.append(path)
        return path

    try:
        yield make
    finally:
        for path in reversed(made):
            _kill_and_remove(path)


def pytest_sessionstart(session: pytest.Session) -> None:
    """Remember where the machine's kernel log stands before any test runs.

    A test worker of pytest-xdist starts with COLUMNS=80 and LINES=24 in its environment,
    which the programs the tests start would take over the size of their own terminal (a
    pseudo-terminal of 100x30, a pipe as wide as its text): every test sees the environment
    it would see in one process, and the tests that want a width set COLUMNS themselves."""
    for name in ("COLUMNS", "LINES"):
        os.environ.pop(name, None)
    records = machine_records()
    if records is not None:
        session.stash[_KERNEL_MARK] = max((seq for seq, _ in records), default=0)
    session.stash[_ABSENT_PLACES] = [place for place in machine_places() if not place.exists()]


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fail the run when a test wrote into the machine's kernel log (tests read logs of their
    own, tests/kernel_log.py; only the kernel's reports of the real cage OOMs may appear), or
    made one of swarmdeck's machine-wide places that was not there when the run began."""
    made = [place for place in session.stash.get(_ABSENT_PLACES, []) if place.exists()]
    if made:
        _fail_session(session, "the tests made the machine's own " + " and ".join(map(str, made)))
    mark = session.stash.get(_KERNEL_MARK, None)
    if mark is None:
        return
    records = machine_records(mark)
    written = written_by_tests(records or [])
    if written:
        lines = "\n".join(f"  {text}" for text in written)
        message = f"the tests wrote {len(written)} line(s) into the machine's kernel log:"
        _fail_session(session, f"{message}\n{lines}")


def _fail_session(session: pytest.Session, message: str) -> None:
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(message, red=True)
    session.exitstatus = pytest.ExitCode.TESTS_FAILED
