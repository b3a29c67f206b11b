"""The Jobs panel and the Hosts memory bar under Textual's Pilot, fed from a real state file."""

from __future__ import annotations

import time

from swarmdeck.app.bar import StackedBar
from swarmdeck.app.hosts import HostCard
from swarmdeck.app.jobs import JobsPanel
from swarmdeck.app.keyed_table import KeyedTable
from swarmdeck.app.main import SwarmdeckApp
from swarmdeck.config import load_config
from swarmdeck.probes.host import host_snapshot, local_host_name
from swarmdeck.probes.ledger import ledger_jobs, memory_book
from swarmdeck.probes.procs import own_identity
from swarmdeck.snapshot import Snapshot
from swarmdeck.state import StateStore

MIB = 1 << 20


def add_job(store: StateStore, label: str, state: str, **extra: object) -> int:
    me = own_identity()
    values = {
        "label": label, "host": local_host_name(), "state": state, "booked": 40 * MIB,
        "cap": 80 * MIB, "admitted_via": "default", "oom_score_adj": 500,
        "runner_pid": me.pid, "runner_start_ticks": me.start_ticks,
        "started_at": time.time() - 75, **extra,
    }
    keys = ", ".join(values)
    marks = ", ".join("?" * len(values))
    with store.transaction() as conn:
        cursor = conn.execute(f"INSERT INTO jobs ({keys}) VALUES ({marks})", tuple(values.values()))
        return int(cursor.lastrowid or 0)


def make_app(store: StateStore) -> SwarmdeckApp:
    config = load_config()

    def prober() -> Snapshot:
        host = host_snapshot(config, store)
        return Snapshot(
            taken_at=time.time(), hosts=[host], jobs=list(ledger_jobs(store)),
            books=[memory_book(config, store)],
        )

    return SwarmdeckApp(config, store, prober=prober)


async def settle(pilot, app: SwarmdeckApp) -> None:
    for _ in range(60):
        await pilot.pause(0.05)
        if app.snapshot is not None and app.query(HostCard):
            break
    await pilot.pause(0.2)


async def test_jobs_show_the_ledger_and_update_in_place() -> None:
    store = StateStore.open_default()
    running = add_job(store, "pytest", "running")
    done = add_job(store, "build", "done", exit_code=250, outcome="own cap", peak=80 * MIB,
                   hit_ceiling=1, ended_at=time.time())
    app = make_app(store)
    async with app.run_test(size=(220, 60)) as pilot:
        await settle(pilot, app)
        panel = app.query_one(JobsPanel)
        table = panel.query_one(KeyedTable)
        assert table.display
        row = table.get_row(str(running))
        assert row[0] == "pytest" and str(row[2]) == "running"
        assert row[3] == "40M" and row[6] == "80M" and row[7] == "default" and row[8] == "500"
        assert row[9].startswith("1m1")
        finished = table.get_row(str(done))
        assert str(finished[10]) == "250 own cap" and "ceiling" in str(finished[5])
        assert panel.border_subtitle == "1 running, 0 queued"
        table.move_cursor(row=1)
        with store.transaction() as conn:
            conn.execute(
                "UPDATE jobs SET state = 'done', exit_code = 0, outcome = 'ok', ended_at = ?"
                " WHERE id = ?", (time.time(), running),
            )
        app.probe()
        for _ in range(40):
            await pilot.pause(0.05)
            if str(table.get_row(str(running))[2]) == "done":
                break
        assert str(table.get_row(str(running))[2]) == "done"
        assert table.cursor_row == 1
        assert table.row_count == 2


async def test_an_empty_ledger_says_how_to_start_a_job() -> None:
    app = make_app(StateStore.open_default())
    async with app.run_test(size=(200, 50)) as pilot:
        await settle(pilot, app)
        panel = app.query_one(JobsPanel)
        assert panel.query_one(".empty").display
        assert not panel.query_one(KeyedTable).display


async def test_the_memory_bar_stacks_the_memory_book() -> None:
    app = make_app(StateStore.open_default())
    async with app.run_test(size=(200, 50)) as pilot:
        await settle(pilot, app)
        card = app.query_one(HostCard)
        bar = card.query_one(".memory-bar", StackedBar)
        assert [segment.name for segment in bar.segments] == [
            "used outside the slice", "slice used", "booked, not yet grown", "room",
        ]
        assert card.book is not None and bar.total == card.book.mem_total
        assert "room" in str(card.query_one(".memory-figures").render())
