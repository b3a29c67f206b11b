"""A host's figures as every face shows them: threads free never reads as a negative count; a
glance at a host says what a new job can still have first; GPU memory free reads per card."""

from __future__ import annotations

from nvml_standin import GIB, ScriptedCard, ScriptedNvml
from swarmdeck.probes.gpu import GpuSnapshot, gpu_snapshot
from swarmdeck.probes.nvml import Nvml
from swarmdeck.sizes import format_size
from swarmdeck.views.hosts import HostFigures, gpu_free_text, headroom_parts, host_cells


def test_threads_free_reads_as_a_share_of_the_budget() -> None:
    assert host_cells(HostFigures(threads_free=12, heavy_threads=16))["threads"] == "12/16"


def test_an_overbooked_budget_reads_none_free_and_how_far_over() -> None:
    assert host_cells(HostFigures(threads_free=-8, heavy_threads=2))["threads"] == "0/2 (8 over)"


def test_unknown_figures_read_as_missing() -> None:
    assert host_cells(HostFigures(), missing="?")["threads"] == "?/?"


def test_a_glance_says_threads_free_memory_room_and_gpu_memory_free_first() -> None:
    figures = HostFigures(cores=64, busy_cores=38.4, threads_free=32, heavy_threads=56,
                          room=250 * GIB, load=(1.0, 2.0, 3.0), available=300 * GIB)
    assert headroom_parts(figures, "60G")[:4] == [
        "threads free 32/56", "memory room 250G", "GPU free 60G", "38.4/64 cores busy",
    ]


def test_a_glance_without_a_book_or_cards_leaves_their_parts_out() -> None:
    parts = headroom_parts(HostFigures(cores=2, threads_free=1, heavy_threads=2))
    assert not any(part.startswith(("memory room", "GPU")) for part in parts), parts
    assert headroom_parts(HostFigures(), "no GPU")[1] == "no GPU"


def test_gpu_memory_free_reads_per_card_or_why_the_cards_were_not_read() -> None:
    cards = [ScriptedCard(total=80 * GIB, used=20 * GIB), ScriptedCard(total=24 * GIB)]
    gpus = gpu_snapshot([], nvml=Nvml(ScriptedNvml(cards)))
    free = [card.memory_free for card in gpus.cards]
    assert gpu_free_text(gpus, "?") == ", ".join(format_size(int(f)) for f in free)  # type: ignore[arg-type]
    assert gpu_free_text(gpu_snapshot([], nvml=Nvml(ScriptedNvml([]))), "?") == "no GPU"
    assert gpu_free_text(GpuSnapshot(state="no driver"), "?") == "no driver"
