"""A job queued here for memory names a peer that fits it now, once, with the exact
`swarmdeck peer run …` line and an alert; it never moves the job. The peer's figures come from
its cached reading, as the probe leaves it."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from cagekit import MIB, write_config

from peer_figures import peer_host_object
from ssh_server import servers as servers
from swarmdeck.cli import main
from swarmdeck.probes.machine import local_host_name
from swarmdeck.probes.peer_cache import reading_of, write_reading
from swarmdeck.state import StateStore

PEER = '[[hosts]]\nname = "box2"\naddress = "127.0.0.1"\nport = 1\n'


def queued_here(tmp_path: Path, v1_slice: Path, extra: str = "") -> None:
    """This host's slice holds the job, but the margin it must leave free never is: it queues."""
    write_config(tmp_path / "config.toml", v1_slice, 256 * MIB, margin="99%",
                 default_prediction="64M")
    with (tmp_path / "config.toml").open("a") as config:
        config.write("\n" + PEER + extra)


def cache_peer(room: int) -> None:
    figures = peer_host_object(room=room, machine_room=room, slice_cap=512 * MIB)
    write_reading(reading_of("box2", figures, time.time()))


def alerts() -> list[dict]:
    store = StateStore.open_default()
    try:
        with store.read() as conn:
            return [dict(row) for row in conn.execute("SELECT * FROM alerts")]
    finally:
        store.close()


def test_a_queued_job_names_the_peer_that_fits_it_once_and_raises_an_alert(
    tmp_path: Path, v1_slice: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    queued_here(tmp_path, v1_slice)
    cache_peer(300 * MIB)
    assert main(["run", "--wait", "1", "--label", "it's big", "--", "echo", "a b"]) == 252
    err = capfd.readouterr().err
    line = ("to run it there instead: swarmdeck peer run box2 --label 'it'\"'\"'s big' -- "
            "echo 'a b'")
    assert err.count(line) == 1
    [alert] = alerts()
    assert (alert["host"], alert["source"]) == (local_host_name(), "runner")
    assert line[24:] in alert["message"]
    assert f"queues on {local_host_name()} for memory; box2 fits it now" in alert["message"]


def test_a_job_queuing_again_counts_its_alert_up_and_opens_it_again(
    tmp_path: Path, v1_slice: Path
) -> None:
    queued_here(tmp_path, v1_slice)
    cache_peer(300 * MIB)
    assert main(["run", "--wait", "0.5", "--label", "suite", "--", "true"]) == 252
    store = StateStore.open_default()
    try:
        with store.transaction() as conn:
            conn.execute("UPDATE alerts SET resolved_at = 1.0, acknowledged_at = 1.0")
    finally:
        store.close()
    assert main(["run", "--wait", "0.5", "--label", "suite", "--", "true"]) == 252
    [alert] = alerts()
    assert (alert["count"], alert["level"], alert["resolved_at"], alert["acknowledged_at"]) == (
        2, "info", None, None)
    assert alert["key"].startswith("peer-fits:box2:")


def test_no_hint_when_the_peer_has_no_room_or_is_disabled(
    tmp_path: Path, v1_slice: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    queued_here(tmp_path, v1_slice)
    cache_peer(32 * MIB)
    assert main(["run", "--wait", "0.5", "--", "true"]) == 252
    assert "peer run" not in capfd.readouterr().err and alerts() == []
    queued_here(tmp_path, v1_slice, "enabled = false\n")
    cache_peer(300 * MIB)
    assert main(["run", "--wait", "0.5", "--", "true"]) == 252
    assert "peer run" not in capfd.readouterr().err and alerts() == []


def test_watch_reads_the_peers_so_a_queued_job_wakes_its_session_headless(
    tmp_path: Path, servers, v1_slice: Path
) -> None:
    """With no control room open, only `swarmdeck watch` runs: it reads the peer itself, so
    "queued here while a peer fits it now" fires and `watch --wake` reports it, and the cache
    the hook and the queue hint read is refreshed by it."""
    import json
    import subprocess

    from cagekit import SWARMDECK, mem_total, new_slice, remove_tree
    from peerkit import start_peer

    from ledger_rows import insert_job
    from swarmdeck.probes.peer_cache import read_cached

    sid = "6666dddd-0000-4000-8000-000000000006"
    here = new_slice()
    try:
        memory = (
            f'[memory]\nslice = "{here}"\nreserve = "{mem_total() - 256 * MIB}B"\n'
            'margin = "99%"\ndefault_prediction = "64M"\nadmission_wait = 0.0\n'
            "[watchdog]\nmin_duration = 0\ninterval = 0.5\n"
        )
        start_peer(tmp_path, servers, v1_slice, extra=memory)
        store = StateStore.open_default()
        try:
            with store.transaction() as conn:
                insert_job(conn, state="queued", booked=64 * MIB, argv=["make", "test"],
                           session_id=sid)
        finally:
            store.close()
        assert read_cached("box2") is None
        woke = subprocess.run([SWARMDECK, "watch", "--wake", "--session", sid],
                              capture_output=True, text=True, timeout=60)
        assert woke.returncode == 0, woke.stderr
        assert "queued_while_peer_fits" in woke.stdout
        assert "swarmdeck peer run box2 -- make test" in woke.stdout
        cached = read_cached("box2")
        assert cached is not None and cached.state == "read"
        once = subprocess.run([SWARMDECK, "watch", "--once", "--json"], capture_output=True,
                              text=True, timeout=60)
        assert [f["rule"] for f in json.loads(once.stdout)["open"]] == ["queued_while_peer_fits"]
    finally:
        remove_tree(here)
