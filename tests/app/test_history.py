"""The readings the detail views draw: one point per snapshot, bounded, never the same reading
twice, a job's kept while it is listed."""

from __future__ import annotations

import dataclasses

from fixed_room import FIGURES, host_at, running_job

from swarmdeck.app.history import RoomHistory
from swarmdeck.probes.host import HostSnapshot
from swarmdeck.probes.memory_book import MemoryBook
from swarmdeck.probes.peer_cache import PeerReading
from swarmdeck.snapshot import Snapshot

GIB = 1 << 30


def scene(taken_at: float, busy: float = 0.5, *, jobs: bool = True,
          peers: list[PeerReading] | None = None) -> Snapshot:
    figures = host_at(taken_at, busy, 100 * GIB, 20 * GIB)
    host = HostSnapshot.from_json(figures)
    book = MemoryBook.from_host_fields(host, figures)
    assert book is not None
    listed = [running_job(taken_at, (busy * 8, busy * 8))] if jobs else []
    return Snapshot(taken_at=taken_at, hosts=[host], books=[book], jobs=listed,
                    peers=peers or [])


def test_each_snapshot_adds_one_reading_of_the_host_and_the_ring_is_bounded() -> None:
    history = RoomHistory(points=5)
    for n in range(8):
        history.observe(scene(1000.0 + n, busy=n / 10))
    points = history.host(FIGURES["name"])
    assert [p.taken_at for p in points] == [1003.0, 1004.0, 1005.0, 1006.0, 1007.0]
    assert [p.busy_cores for p in points] == [64 * n / 10 for n in range(3, 8)]
    assert [name for name, _ in points[-1].book or ()] == [
        "outside the slice", "slice used", "booked, not yet grown", "room",
    ]
    assert dict(points[-1].book or ())["slice used"] == 100 * GIB


def test_a_snapshot_handed_over_twice_adds_no_second_reading() -> None:
    history = RoomHistory(points=10)
    once = scene(1000.0)
    history.observe(once)
    history.observe(dataclasses.replace(once))
    assert len(history.host(FIGURES["name"])) == 1
    assert len(history.job(7)) == 1


def test_a_running_jobs_use_is_kept_while_it_is_listed_and_forgotten_after() -> None:
    history = RoomHistory(points=10)
    history.observe(scene(1000.0, 0.25))
    history.observe(scene(1001.0, 0.5))
    assert [(p.cores_in_use, p.threads_at_once) for p in history.job(7)] == [(2.0, 2.0),
                                                                            (4.0, 4.0)]
    history.observe(scene(1002.0, jobs=False))
    assert history.job(7) == []


def test_a_peers_cached_reading_counts_once() -> None:
    peer_figures = {**host_at(900.0, 0.1, 10 * GIB, 0), "name": "box2", "local": False}
    host = HostSnapshot.from_json(peer_figures)
    reading = PeerReading("box2", "read", figures=peer_figures, read_at=900.0, host=host,
                          book=MemoryBook.from_host_fields(host, peer_figures))
    history = RoomHistory(points=10)
    for n in range(3):
        history.observe(scene(1000.0 + n, peers=[reading]))
    assert [p.taken_at for p in history.host("box2")] == [900.0]
    assert history.host("box2")[0].book is not None
