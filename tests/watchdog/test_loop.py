"""The engine beside the app's refresh: a pass once `watchdog.interval` has gone by, and the
records read again only after one; between passes the snapshot is given back as it was read,
without another query (the app refreshes every 2 s, the watchdog passes every 30 s)."""

from __future__ import annotations

import time

from scene_kit import write_watchdog_config

from swarmdeck.actions.alerts import raise_alert
from swarmdeck.snapshot import take_snapshot
from swarmdeck.watchdog.loop import Watchdog


def _raise(store, key: str) -> None:
    with store.transaction() as conn:
        raise_alert(conn, key, "info", "runner", "box2", f"{key} happened", time.time())


def test_after_a_pass_the_records_are_read_again(isolated_home, store):
    config = write_watchdog_config(isolated_home, interval=60, min_duration=0)
    engine = Watchdog(config, store)
    try:
        snapshot = take_snapshot(config, store)
        _raise(store, "slice-full")
        observed = engine.observe(snapshot)
        assert snapshot.alerts == []
        assert [alert.key for alert in observed.alerts] == ["slice-full"]
    finally:
        engine.close()


def test_between_passes_the_snapshot_is_given_back_without_a_query(isolated_home, store):
    config = write_watchdog_config(isolated_home, interval=60, min_duration=0)
    engine = Watchdog(config, store)
    try:
        engine.observe(take_snapshot(config, store))
        snapshot = take_snapshot(config, store)
        queries: list[str] = []
        store.connect().set_trace_callback(queries.append)
        try:
            observed = engine.observe(snapshot)
        finally:
            store.connect().set_trace_callback(None)
        assert observed is snapshot
        assert queries == []
    finally:
        engine.close()
