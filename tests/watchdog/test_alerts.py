"""Alerts leave the room once a person acknowledged them or once what they say stops being
true: the watchdog pass resolves a "peer fits it now" alert when that job no longer queues."""

from __future__ import annotations

import getpass
import time

from scene_kit import write_watchdog_config

from ledger_rows import add_job
from swarmdeck.actions.alerts import raise_alert
from swarmdeck.probes.store_rows import open_alerts
from swarmdeck.snapshot import take_snapshot
from swarmdeck.watchdog.alerts import acknowledge_alert
from swarmdeck.watchdog.loop import Watchdog

WORKLOAD = "f00dfeed"


def _raise(store, key: str) -> int:
    with store.transaction() as conn:
        raise_alert(conn, key, "info", "runner", "box2", f"{key} happened", time.time())
    [alert] = [a for a in open_alerts(store) if a.key == key]
    return alert.id


def test_an_acknowledged_alert_records_when_and_who_and_is_no_longer_open(store):
    alert_id = _raise(store, "slice-full")
    assert acknowledge_alert(store, alert_id, "ana", 1234.5)
    assert open_alerts(store) == []
    with store.read() as conn:
        row = conn.execute("SELECT acknowledged_at, acknowledged_by, resolved_at FROM alerts"
                           " WHERE id = ?", (alert_id,)).fetchone()
    assert (row["acknowledged_at"], row["acknowledged_by"], row["resolved_at"]) == (
        1234.5, "ana", None)
    assert not acknowledge_alert(store, alert_id, "ana", 1300.0), "only once"
    assert not acknowledge_alert(store, 999, "ana", 1300.0), "no such alert"


def test_an_acknowledged_alert_raised_again_is_open_again(store):
    alert_id = _raise(store, "slice-full")
    acknowledge_alert(store, alert_id, getpass.getuser(), time.time())
    _raise(store, "slice-full")
    [alert] = open_alerts(store)
    assert alert.count == 2 and alert.acknowledged_at is None


def test_the_pass_resolves_a_peer_fits_alert_once_its_job_no_longer_queues(
    isolated_home, store
):
    config = write_watchdog_config(isolated_home, interval=0.1, min_duration=0)
    job = add_job(store, state="queued", fingerprint=WORKLOAD, label="integration suite")
    _raise(store, f"peer-fits:box2:{WORKLOAD}")
    _raise(store, "kill:1")
    engine = Watchdog(config, store)
    try:
        engine.run_pass(take_snapshot(config, store))
        assert {a.key for a in open_alerts(store)} == {f"peer-fits:box2:{WORKLOAD}", "kill:1"}
        with store.transaction() as conn:
            conn.execute("UPDATE jobs SET state = 'running' WHERE id = ?", (job,))
        engine.run_pass(take_snapshot(config, store))
        assert {a.key for a in open_alerts(store)} == {"kill:1"}, "a decision stays until read"
        with store.read() as conn:
            [resolved] = conn.execute(
                "SELECT resolved_at FROM alerts WHERE key LIKE 'peer-fits:%'").fetchone()
        assert resolved is not None
    finally:
        engine.close()


def test_the_pass_resolves_an_untrue_alert_in_the_transaction_that_records_its_findings(
    isolated_home, store
):
    config = write_watchdog_config(isolated_home, interval=0.1, min_duration=0)
    job = add_job(store, state="queued", fingerprint=WORKLOAD, label="integration suite")
    _raise(store, f"peer-fits:box2:{WORKLOAD}")
    engine = Watchdog(config, store)
    try:
        engine.run_pass(take_snapshot(config, store))
        with store.transaction() as conn:
            conn.execute("UPDATE jobs SET state = 'running' WHERE id = ?", (job,))
        snapshot = take_snapshot(config, store)
        begun: list[str] = []
        store.connect().set_trace_callback(
            lambda sql: begun.append(sql) if sql.startswith("BEGIN IMMEDIATE") else None)
        try:
            engine.run_pass(snapshot)
        finally:
            store.connect().set_trace_callback(None)
        assert open_alerts(store) == []
        assert len(begun) == 1, "one write transaction for the whole pass"
    finally:
        engine.close()


def test_a_pass_without_the_writer_s_lease_resolves_no_alert(isolated_home, store):
    config = write_watchdog_config(isolated_home, interval=60, min_duration=0)
    writer, reader = Watchdog(config, store), Watchdog(config, store)
    try:
        assert writer.run_pass(take_snapshot(config, store)).writer
        _raise(store, f"peer-fits:box2:{WORKLOAD}")
        assert not reader.run_pass(take_snapshot(config, store)).writer
        assert {a.key for a in open_alerts(store)} == {f"peer-fits:box2:{WORKLOAD}"}
    finally:
        reader.close()
        writer.close()
