"""Nothing is redrawn when nothing changed, and a panel nobody can see is not redrawn at all.

The app is fed snapshots from a scripted prober: the same figures in a new snapshot each round
(a new `taken_at`, as every real refresh has), read once from a real state file and host.
"""

from __future__ import annotations

import dataclasses
import time
from collections import Counter
from pathlib import Path

import pytest
from pilot_waits import probed, until
from rich.text import Text
from textual.dom import DOMNode
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Label

from ledger_rows import add_job
from swarmdeck.app.jobs import JobsPanel
from swarmdeck.app.keyed_table import KeyedTable
from swarmdeck.app.main import SwarmdeckApp
from swarmdeck.config import load_config
from swarmdeck.probes.gpu import GpuSnapshot
from swarmdeck.probes.host import host_snapshot
from swarmdeck.probes.memory_book import ledger_jobs, memory_book
from swarmdeck.snapshot import Snapshot
from swarmdeck.state import StateStore

DAY = 86400.0


class Scripted:
    """The same room each round, in a new snapshot; `jobs` may be changed between rounds."""

    def __init__(self, store: StateStore) -> None:
        config = load_config()
        long_ago = time.time() - 3 * DAY
        for label, code in (("build", 250), ("lint", 0)):
            add_job(store, label=label, state="done", exit_code=code, outcome="ok",
                    started_at=long_ago, ended_at=long_ago + 60)
        self.store = store
        self.first = Snapshot(
            taken_at=time.time(), hosts=[host_snapshot(config, store)],
            jobs=list(ledger_jobs(store)), books=[memory_book(config, store)],
        )
        self.jobs = self.first.jobs

    def __call__(self) -> Snapshot:
        return dataclasses.replace(self.first, taken_at=time.time(), jobs=list(self.jobs))


def counting_refreshes(monkeypatch: pytest.MonkeyPatch, app: SwarmdeckApp) -> Counter[str]:
    """Every refresh asked for by a widget inside a panel, by widget class."""
    asked: Counter[str] = Counter()
    refresh = Widget.refresh

    def counted(self: Widget, *regions, **kwargs):
        if any(ancestor.has_class("panel") for ancestor in self.ancestors_with_self):
            asked[type(self).__name__] += 1
        return refresh(self, *regions, **kwargs)

    monkeypatch.setattr(Widget, "refresh", counted)
    return asked


async def test_an_unchanged_snapshot_redraws_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    store = StateStore.open_default()
    app = SwarmdeckApp(load_config(), store, prober=Scripted(store))
    async with app.run_test(size=(160, 45)) as pilot:
        await probed(pilot, rounds=2)
        asked = counting_refreshes(monkeypatch, app)
        await probed(pilot, rounds=3)
        assert app.snapshots_taken >= 5
        assert asked == Counter()


async def test_a_change_redraws_only_what_changed(monkeypatch: pytest.MonkeyPatch) -> None:
    store = StateStore.open_default()
    prober = Scripted(store)
    app = SwarmdeckApp(load_config(), store, prober=prober)
    async with app.run_test(size=(160, 45)) as pilot:
        await probed(pilot, rounds=2)
        asked = counting_refreshes(monkeypatch, app)
        add_job(store, label="new", state="queued")
        prober.jobs = list(ledger_jobs(store))
        await probed(pilot)
        assert asked and set(asked) <= {"KeyedTable", "JobsPanel", "ScrollBar"}, asked


async def test_a_panel_behind_another_screen_is_not_redrawn_until_it_shows(
    isolated_home: Path,
) -> None:
    """Snapshots come only when the test asks (refresh once an hour), so every one is known."""
    (isolated_home / "config.toml").write_text("[ui]\nrefresh_interval = 3600\n")
    store = StateStore.open_default()
    prober = Scripted(store)
    app = SwarmdeckApp(load_config(), store, prober=prober)
    async with app.run_test(size=(160, 45)) as pilot:
        await probed(pilot)
        panel = app.query_one(JobsPanel)
        drawn: list[Snapshot] = []
        show = panel.show
        panel.show = lambda snapshot: (drawn.append(snapshot), show(snapshot))  # type: ignore[method-assign]
        await app.push_screen(Screen())
        await pilot.pause()
        add_job(store, label="while away", state="queued")
        prober.jobs = list(ledger_jobs(store))
        await probed(pilot, rounds=2)
        assert drawn == []
        app.pop_screen()
        await until(pilot, lambda: drawn, "the panel drawn again")
        assert len(drawn) == 1
        assert panel.query_one("#jobs-table").row_count == 3
        assert not panel.query_one(".empty", Label).display


def screen_lines(app: SwarmdeckApp) -> list[str]:
    """The screen as the terminal would be sent it now, one string per line."""
    return [strip.text for strip in app.screen._compositor.render_strips()]


def relabelled(prober: Scripted, old: str, new: str) -> None:
    prober.jobs = [
        dataclasses.replace(job, label=new) if job.label == old else job for job in prober.jobs
    ]


async def test_a_changed_cell_is_redrawn_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """A runtime ticking in one row must not render every cell of every row again: only that
    cell is rendered (the table's own cache answers for the others), and the screen shows it."""
    store = StateStore.open_default()
    prober = Scripted(store)
    app = SwarmdeckApp(load_config(), store, prober=prober)
    async with app.run_test(size=(160, 45)) as pilot:
        await probed(pilot, rounds=2)
        relabelled(prober, "lint", "tidy")
        await probed(pilot)
        rendered: list[str] = []
        render_cell = KeyedTable.render_cell

        def counted(self: KeyedTable, cell: Text, *args: object) -> object:
            rendered.append(cell.plain)
            return render_cell(self, cell, *args)

        monkeypatch.setattr(KeyedTable, "render_cell", counted)
        asked = counting_refreshes(monkeypatch, app)
        relabelled(prober, "tidy", "form")
        await probed(pilot)
        lines = screen_lines(app)
        assert any("form" in line for line in lines), lines
        assert not any("tidy" in line for line in lines), lines
        assert asked == Counter(KeyedTable=1), asked
        assert rendered == ["form"], rendered


class NoGpuRead(Scripted):
    """The room of `Scripted` with its GPU reading taken anew each round, as the real probe
    takes it: the same state and reason, a new `taken_at`."""

    def __call__(self) -> Snapshot:
        snapshot = super().__call__()
        gpus = GpuSnapshot("not read", "NVML is not installed", taken_at=time.time())
        return dataclasses.replace(snapshot, gpus=gpus)


@pytest.mark.parametrize("prober", [Scripted, NoGpuRead], ids=["same", "new-gpu-reading"])
async def test_an_unchanged_snapshot_looks_nothing_up_and_syncs_no_table(
    monkeypatch: pytest.MonkeyPatch, prober: type[Scripted],
) -> None:
    """Finding a widget walks the DOM and matches selectors, and a table's sync compares every
    cell: with nothing new to show, no panel does either."""
    store = StateStore.open_default()
    app = SwarmdeckApp(load_config(), store, prober=prober(store))
    async with app.run_test(size=(160, 45)) as pilot:
        await probed(pilot, rounds=2)
        done: Counter[str] = Counter()
        for name in ("query", "query_one"):
            real = getattr(DOMNode, name)

            def counted(self: DOMNode, *args, _real=real, _name=name, **kwargs):
                if any(node.has_class("panel") for node in self.ancestors_with_self):
                    done[f"{type(self).__name__}.{_name}"] += 1
                return _real(self, *args, **kwargs)

            monkeypatch.setattr(DOMNode, name, counted)
        sync = KeyedTable.sync
        monkeypatch.setattr(
            KeyedTable, "sync", lambda self, rows: (done.update(["sync"]), sync(self, rows))
        )
        await probed(pilot, rounds=3)
        assert done == Counter(), done


MIB = 1024 * 1024


class Jittering(Scripted):
    """The room of `Scripted`, its host's figures moving each round by less than a person
    reads: load by 0.02, busy cores within a tenth, available memory by 2 MiB."""

    rounds = 0

    def __call__(self) -> Snapshot:
        self.rounds += 1
        hair = self.rounds % 2
        host, book = self.first.hosts[0], self.first.books[0]
        cores = dataclasses.replace(
            host.cores,
            busy_fraction=(0.31 + 0.02 * hair) / host.cores.count,
            loadavg=tuple(value + 0.02 * hair for value in host.cores.loadavg),
        )
        memory = dataclasses.replace(host.memory, available=host.memory.available - 2 * MIB * hair)
        return dataclasses.replace(
            self.first,
            taken_at=time.time(),
            hosts=[dataclasses.replace(host, cores=cores, memory=memory)],
            books=[dataclasses.replace(book, mem_available=book.mem_available - 2 * MIB * hair)],
        )


async def test_figures_moving_by_less_than_a_reading_redraw_no_host_card(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Only the busy-cores history moves: it grows by a column each run of readings."""
    store = StateStore.open_default()
    app = SwarmdeckApp(load_config(), store, prober=Jittering(store))
    async with app.run_test(size=(160, 45)) as pilot:
        await probed(pilot, rounds=3)
        asked = counting_refreshes(monkeypatch, app)
        await probed(pilot, rounds=4)
        del asked["ScaledSparkline"]
        assert asked == Counter(), asked


class Draining(Scripted):
    """The room of `Scripted` on a small slice whose use falls from 44 MiB to 6 MiB, then jitters
    by 100 KiB: a figure of a few MiB moves by what its digits say."""

    rounds = 0

    def __call__(self) -> Snapshot:
        self.rounds += 1
        book = self.first.books[0]
        used = 44 * MIB if self.rounds <= 3 else 6 * MIB + (self.rounds % 2) * 100 * 1024
        small = dataclasses.replace(
            book, slice_cap=768 * MIB, unreclaimable=used, jobs=(), not_yet_grown=0,
        )
        return dataclasses.replace(self.first, taken_at=time.time(), books=[small])


async def test_a_small_slice_figure_moves_when_its_digits_do_and_holds_through_jitter(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store = StateStore.open_default()
    app = SwarmdeckApp(load_config(), store, prober=Draining(store))
    async with app.run_test(size=(160, 45)) as pilot:
        legend = app.query_one(".memory-legend")
        await until(pilot, lambda: "slice used 44M " in str(legend.content), "the first figure")
        await until(pilot, lambda: "slice used 6M " in str(legend.content), "the drained figure")
        asked = counting_refreshes(monkeypatch, app)
        await probed(pilot, rounds=4)
        assert asked["Static"] == 0, asked
