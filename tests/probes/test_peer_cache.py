"""The peer cache the hook reads: fresh figures count, stale or failed readings are "not read"."""

from __future__ import annotations

import time
from pathlib import Path

from peer_figures import peer_host_object
from swarmdeck.config import load_config
from swarmdeck.hooks.resources import peer_facts
from swarmdeck.probes.peer_cache import (
    PeerReading,
    current_reading,
    reading_of,
    write_reading,
)

GIB = 1024**3
FIGURES = peer_host_object()


def _config(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text(
        '[ui]\nrefresh_interval = 2.0\n\n[[hosts]]\nname = "box2"\naddress = "127.0.0.1"\n'
    )


def test_fresh_reading_gives_the_peer_its_figures(tmp_path: Path) -> None:
    _config(tmp_path)
    write_reading(reading_of("box2", FIGURES, time.time() - 5))
    [facts] = peer_facts(load_config())
    assert facts.state == "read"
    assert facts.memory_room == 30 * GIB  # the smaller of slice room and machine room
    assert facts.figures.cores == 16 and facts.figures.threads_free == 12
    assert facts.slice_cap == 50 * GIB


def test_reading_older_than_thirty_seconds_is_not_read_with_its_age(tmp_path: Path) -> None:
    _config(tmp_path)
    write_reading(reading_of("box2", FIGURES, time.time() - 300))
    [facts] = peer_facts(load_config())
    assert facts.state == "not read"
    assert facts.reason == "last read 5m ago"
    assert facts.memory_room is None


def test_failed_reading_is_not_read_with_its_reason(tmp_path: Path) -> None:
    _config(tmp_path)
    write_reading(PeerReading("box2", "not read", reason="connection refused", read_at=time.time()))
    [facts] = peer_facts(load_config())
    assert (facts.state, facts.reason) == ("not read", "connection refused")


def test_freshness_follows_three_refreshes_when_longer() -> None:
    now = time.time()
    write_reading(reading_of("box2", FIGURES, now - 50))
    assert current_reading("box2", 20.0, now).state == "read"
    assert current_reading("box2", 10.0, now).state == "not read"


def test_unreadable_cache_file_is_not_read(tmp_path: Path) -> None:
    _config(tmp_path)
    path = tmp_path / "state" / "peers" / "box2.json"
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    [facts] = peer_facts(load_config())
    assert facts.state == "not read" and "unreadable" in facts.reason


def test_figures_that_do_not_parse_are_not_read_saying_which(tmp_path: Path) -> None:
    _config(tmp_path)
    broken = {key: value for key, value in FIGURES.items() if key != "mem_available"}
    write_reading(PeerReading("box2", "read", figures=broken, read_at=time.time()))
    [facts] = peer_facts(load_config())
    assert facts.state == "not read" and "mem_available" in facts.reason


def test_a_cached_reading_is_parsed_into_the_peers_host_and_book() -> None:
    write_reading(reading_of("box2", FIGURES, time.time()))
    reading = current_reading("box2", 2.0)
    assert reading.host is not None and reading.book is not None
    assert (reading.host.name, reading.host.local, reading.host.cores.count) == ("box2", False, 16)
    assert (reading.book.room, reading.book.machine_room) == (40 * GIB, 30 * GIB)
    assert reading.book.usable == 30 * GIB
    assert reading.to_json()["room"] == 40 * GIB
