"""What a new user sees at 100×30 and 160×45: empty panels out of the way, the Jobs table's
answer on screen, every word and glyph explained, one row order, empty states that say where
they looked, lock ages that are true."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest
from pilot_waits import probed, until
from rendered import plain
from textual.widgets import Static

from swarmdeck.actions import lock
from swarmdeck.app.help import HelpScreen
from swarmdeck.app.hosts import HostCard
from swarmdeck.app.keyed_table import KeyedTable
from swarmdeck.app.main import SwarmdeckApp
from swarmdeck.config import load_config
from swarmdeck.probes import locks
from swarmdeck.probes.host import local_host_name
from swarmdeck.probes.procs import identity, own_identity
from swarmdeck.state import StateStore
from swarmdeck.views.jobs import PANEL_COLUMNS
from swarmdeck.views.locks import COLUMNS

SIZES = pytest.mark.parametrize("size", [(100, 30), (160, 45)], ids=["100x30", "160x45"])
MIB = 1 << 20


def add_job(store: StateStore, label: str, state: str, **extra: object) -> int:
    me = own_identity()
    values = {
        "label": label, "host": local_host_name(), "state": state, "booked": 40 * MIB,
        "cap": 80 * MIB, "admitted_via": "default", "oom_score_adj": 500,
        "runner_pid": me.pid, "runner_start_ticks": me.start_ticks,
        "started_at": time.time() - 75, **extra,
    }
    keys, marks = ", ".join(values), ", ".join("?" * len(values))
    with store.transaction() as conn:
        cursor = conn.execute(f"INSERT INTO jobs ({keys}) VALUES ({marks})", tuple(values.values()))
        return int(cursor.lastrowid or 0)


def ended(store: StateStore, label: str, code: int, outcome: str, state: str = "done") -> int:
    return add_job(store, label, state, exit_code=code, outcome=outcome, ended_at=time.time())


def visible_columns(table: KeyedTable) -> list[str]:
    """The keys of the columns the table draws (whole, or cut to the width), in order."""
    return [column.key for column in table.columns if column.width > 0]


@SIZES
async def test_empty_panels_shrink_to_their_line_and_jobs_and_agents_keep_the_room(
    size: tuple[int, int],
) -> None:
    app = SwarmdeckApp(load_config(), StateStore.open_default())
    async with app.run_test(size=size) as pilot:
        await probed(pilot)
        await until(pilot, lambda: app.query(HostCard), "the host")
        await pilot.pause()
        for panel_id in ("#gpus", "#locks", "#alerts"):
            panel = app.query_one(panel_id)
            assert panel.has_class("-empty")
            assert panel.region.height <= 4, panel_id
        for panel_id in ("#jobs", "#agents"):
            assert app.query_one(panel_id).region.height >= 8, panel_id
        hint = app.query_one("#locks .empty")
        assert "swarmdeck lock acquire PATH" in str(hint.render())
        assert hint.region.height >= 1 and hint.region.width <= app.query_one("#locks").region.width


@pytest.mark.parametrize("size", [(100, 30), (120, 40), (160, 45)], ids=str)
async def test_an_empty_panel_says_nothing_of_columns_to_scroll(size: tuple[int, int]) -> None:
    """An empty panel draws its hint, not its table: there are no columns to scroll, even
    where the hidden table's columns would not fit."""
    app = SwarmdeckApp(load_config(), StateStore.open_default())
    async with app.run_test(size=size) as pilot:
        await probed(pilot)
        await pilot.pause()
        for panel_id in ("#jobs", "#locks", "#alerts", "#watchdog"):
            panel = app.query_one(panel_id)
            assert panel.has_class("-empty"), panel_id
            assert "more columns" not in str(panel.border_subtitle), (panel_id, size)


@SIZES
async def test_the_jobs_state_says_how_each_job_ended_and_is_on_screen(
    size: tuple[int, int],
) -> None:
    store = StateStore.open_default()
    ids = {
        "own cap 250": ended(store, "build", 250, "own cap"),
        "timed out 253": ended(store, "slow", 253, "timed out"),
        "refused 252": ended(store, "huge", 252, "waited past --wait", state="refused"),
        "ok": ended(store, "lint", 0, "ok"),
        "exit 7": ended(store, "flaky", 7, "exit 7"),
    }
    app = SwarmdeckApp(load_config(), store)
    async with app.run_test(size=size) as pilot:
        await probed(pilot)
        table = app.query_one("#jobs-table", KeyedTable)
        keys = [key for key, _ in PANEL_COLUMNS]
        for wanted, job_id in ids.items():
            assert str(table.get_row(str(job_id))[keys.index("state")]) == wanted
        assert keys[:6] == ["label", "state", "booked", "peak", "cap", "runtime"]
        assert keys.index("via") > keys.index("cap") and keys.index("adj") > keys.index("cap")
        assert visible_columns(table)[:4] == ["label", "state", "booked", "peak"]


@SIZES
async def test_every_word_and_glyph_is_labelled(size: tuple[int, int]) -> None:
    app = SwarmdeckApp(load_config(), StateStore.open_default())
    async with app.run_test(size=size) as pilot:
        await probed(pilot)
        await until(pilot, lambda: app.query(HostCard) and app.query_one(HostCard).book, "book")
        await pilot.pause()
        card = app.query_one(HostCard)
        assert "busy cores, last" in str(card.query_one(".history-label").render())
        title = str(card.query_one(".host-name").content)
        assert "threads free" in title
        assert "cores busy" in str(card.query_one(".cores-figures").render())
        segments = card.query_one(".memory-bar").segments
        glyphs = [segment.glyph for segment in segments]
        assert len(set(glyphs)) == len(glyphs) == 4
        legend = str(card.query_one(".memory-legend").content)
        for segment in segments:
            assert f"{segment.glyph} {segment.name}" in legend
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        meaning = plain(app.screen.query_one("#help-columns", Static).content)
        assert "what the columns mean" in str(app.screen.query("Label")[1].render())
        for term in ("ceiling", "peak N at once", "eff", "threads free", "history"):
            assert term in meaning, term


@SIZES
async def test_jobs_keep_one_order_newest_first_across_refreshes_and_restarts(
    size: tuple[int, int],
) -> None:
    store = StateStore.open_default()
    first = [ended(store, f"job {n}", 0, "ok") for n in range(3)]
    app = SwarmdeckApp(load_config(), store)
    async with app.run_test(size=size) as pilot:
        await probed(pilot)
        table = app.query_one("#jobs-table", KeyedTable)
        table.move_cursor(row=1)
        newcomer = add_job(store, "new one", "queued", started_at=None)
        await probed(pilot)
        running_order = table.row_keys
        assert running_order == [str(i) for i in [newcomer, *reversed(first)]]
        assert table.cursor_key() == str(first[1])
    again = SwarmdeckApp(load_config(), store)
    async with again.run_test(size=size) as pilot:
        await probed(pilot)
        table = again.query_one("#jobs-table", KeyedTable)
        assert table.row_keys == running_order


@SIZES
async def test_an_old_lock_shows_its_age(size: tuple[int, int], tmp_path: Path) -> None:
    holder = subprocess.Popen(["sleep", "60"])
    try:
        me = identity(holder.pid)
        assert me is not None
        lock.acquire(tmp_path / "work", session="A", command="make", holder=me)
        lock_file = locks.lock_file_for(tmp_path / "work")
        record = json.loads(lock_file.read_text())
        record["since"] = time.time() - 7 * 60 - 5
        lock_file.write_text(json.dumps(record))
        app = SwarmdeckApp(load_config(), StateStore.open_default())
        async with app.run_test(size=size) as pilot:
            await probed(pilot)
            table = app.query_one("#locks-table", KeyedTable)
            drawn = map(str, table.get_row(f"lock:{lock_file}"))
            row = dict(zip([key for key, _ in COLUMNS], drawn, strict=True))
            assert row["since"] == "7m"
            assert {"state", "since"} <= set(visible_columns(table))
    finally:
        holder.kill()
        holder.wait()
