"""Snapshots come from one probe thread started with the app: no Worker, no worker-state
messages and no timer per refresh, probes never overlap, a failed probe says so once and
probing goes on, "refresh now" wakes the thread, and quitting stops it."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from pilot_waits import probed, until
from textual.worker_manager import WorkerManager

from swarmdeck.app.main import SwarmdeckApp
from swarmdeck.config import load_config
from swarmdeck.probes.host import host_snapshot
from swarmdeck.snapshot import Snapshot
from swarmdeck.state import StateStore


class Recording:
    """A prober that notes the thread each snapshot is taken in, and whether two overlap;
    it raises on the calls numbered in `failing`."""

    def __init__(self, store: StateStore, failing: tuple[int, ...] = ()) -> None:
        self.host = host_snapshot(load_config(), store)
        self.threads: list[threading.Thread] = []
        self.failing = failing
        self.running = 0
        self.overlapped = False

    def __call__(self) -> Snapshot:
        self.running += 1
        self.overlapped |= self.running > 1
        try:
            self.threads.append(threading.current_thread())
            if len(self.threads) in self.failing:
                raise OSError("the probe broke")
            time.sleep(0.01)
            return Snapshot(taken_at=time.time(), hosts=[self.host])
        finally:
            self.running -= 1


def refreshing(home: Path, interval: float) -> None:
    (home / "config.toml").write_text(f"[ui]\nrefresh_interval = {interval}\n")


async def test_every_refresh_comes_from_one_thread_and_starts_no_worker(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    refreshing(isolated_home, 0.05)
    workers: list[str] = []
    add = WorkerManager.add_worker
    monkeypatch.setattr(
        WorkerManager, "add_worker",
        lambda self, worker, **kw: (workers.append(worker.group), add(self, worker, **kw))[1],
    )
    store = StateStore.open_default()
    prober = Recording(store)
    app = SwarmdeckApp(load_config(), store, prober=prober)
    async with app.run_test(size=(120, 35)) as pilot:
        await until(pilot, lambda: app.snapshots_taken >= 6, "six refreshes")
        for _ in range(5):
            app.probe()
        await probed(pilot, rounds=2)
    assert len(set(map(id, prober.threads))) == 1, prober.threads
    assert "probe" not in workers, workers
    assert not prober.overlapped


async def test_quitting_stops_the_probe_thread(isolated_home: Path) -> None:
    refreshing(isolated_home, 3600)
    store = StateStore.open_default()
    prober = Recording(store)
    app = SwarmdeckApp(load_config(), store, prober=prober)
    async with app.run_test(size=(120, 35)) as pilot:
        await probed(pilot)
        started = time.monotonic()
        await pilot.press("q")
    assert not prober.threads[0].is_alive()
    assert time.monotonic() - started < 5


async def test_refresh_now_wakes_the_probe_thread(isolated_home: Path) -> None:
    refreshing(isolated_home, 3600)
    store = StateStore.open_default()
    app = SwarmdeckApp(load_config(), store, prober=Recording(store))
    async with app.run_test(size=(120, 35)) as pilot:
        await until(pilot, lambda: app.snapshots_taken == 1, "the first snapshot")
        app.probe()
        await until(pilot, lambda: app.snapshots_taken == 2, "a snapshot at once")


async def test_a_failed_probe_is_said_once_and_probing_goes_on(isolated_home: Path) -> None:
    refreshing(isolated_home, 0.05)
    store = StateStore.open_default()
    prober = Recording(store, failing=(2,))
    app = SwarmdeckApp(load_config(), store, prober=prober)
    said: list[str] = []
    notify = app.notify
    app.notify = lambda message, *a, **kw: (said.append(str(message)), notify(message, *a, **kw))  # type: ignore[method-assign]
    async with app.run_test(size=(120, 35)) as pilot:
        await until(pilot, lambda: app.snapshots_taken >= 4, "refreshes after the failure")
    assert said.count("probe failed: the probe broke") == 1, said
