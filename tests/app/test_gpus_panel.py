"""The GPUs panel under Textual's Pilot. No GPU here: cards come from the scripted NVML stand-in
(tests/nvml_standin.py); their processes are real ones."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
from pilot_waits import probed, until

from nvml_standin import GIB, ScriptedCard, ScriptedNvml
from swarmdeck.app.gpus import GpuCardView, GpusPanel
from swarmdeck.app.keyed_table import KeyedTable
from swarmdeck.app.main import SwarmdeckApp
from swarmdeck.config import load_config
from swarmdeck.probes.gpu import gpu_snapshot
from swarmdeck.probes.nvml import Nvml
from swarmdeck.snapshot import Snapshot
from swarmdeck.state import StateStore


@pytest.fixture
def on_card() -> Iterator[tuple[int, int]]:
    procs = [
        subprocess.Popen(["sleep", "60"]),
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]),
    ]
    try:
        yield procs[0].pid, procs[1].pid
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


def app_with(nvml: Nvml, allowlist: list[str]) -> SwarmdeckApp:
    def prober() -> Snapshot:
        return Snapshot(taken_at=time.time(), hosts=[], gpus=gpu_snapshot(allowlist, nvml=nvml))

    return SwarmdeckApp(load_config(), StateStore.open_default(), prober=prober)


async def settle(pilot, app: SwarmdeckApp) -> None:
    """Until the first reading reached the panel and every new card drew it (a card mounted
    by that reading is given it after its first refresh)."""
    await probed(pilot)
    await until(
        pilot,
        lambda: all(str(v.query_one(".gpu-facts").render()) for v in app.query(GpuCardView)),
        "every card's facts",
    )


async def test_cards_show_memory_and_processes_marked_by_standing(on_card) -> None:
    sleep_pid, python_pid = on_card
    cards = [
        ScriptedCard(used=20 * GIB, processes=[(sleep_pid, 3 * GIB), (python_pid, None)]),
        ScriptedCard(name="NVIDIA A10", total=24 * GIB, used=0),
    ]
    app = app_with(Nvml(ScriptedNvml(cards)), ["sleep"])
    async with app.run_test(size=(200, 60)) as pilot:
        await settle(pilot, app)
        panel = app.query_one(GpusPanel)
        assert panel.border_title == "GPUs"
        views = list(panel.query(GpuCardView))
        assert [v.id for v in views] == ["gpu-card-0", "gpu-card-1"]
        figures = str(views[0].query_one(".gpu-memory-figures").render())
        assert "20" in figures and "80" in figures and "used" in figures
        table = panel.query_one(KeyedTable)
        sleep_row = [str(cell) for cell in table.get_row(f"0:{sleep_pid}")]
        python_row = [str(cell) for cell in table.get_row(f"0:{python_pid}")]
        assert str(sleep_row[5]) == "allowlisted" and sleep_row[3] == "sleep"
        assert str(python_row[5]) == "foreign" and python_row[4] == "n/a"
        assert "no gpu-run holds" in str(panel.query_one("#gpu-holders").render())


async def test_no_gpu_is_said_plainly() -> None:
    app = app_with(Nvml(ScriptedNvml(cards=[])), [])
    async with app.run_test(size=(200, 60)) as pilot:
        await settle(pilot, app)
        panel = app.query_one(GpusPanel)
        assert "no GPU" in str(panel.query_one(".empty").render())
        assert not panel.query_one(KeyedTable).display


async def test_values_a_card_does_not_give_read_na_without_units(on_card) -> None:
    cards = [ScriptedCard(mig=True, processes=[(on_card[0], GIB)])]
    app = app_with(Nvml(ScriptedNvml(cards)), [])
    async with app.run_test(size=(200, 60)) as pilot:
        await settle(pilot, app)
        facts = str(app.query_one(GpuCardView).query_one(".gpu-facts").render())
        assert "load n/a   memory load n/a   41°C" in facts and "n/a%" not in facts
        row = app.query_one(GpusPanel).query_one(KeyedTable).get_row(f"0:{on_card[0]}")
        assert str(row[4]) == "n/a"
