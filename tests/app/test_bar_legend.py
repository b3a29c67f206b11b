"""Every bar draws its glyphs from one legend (app/bar_legend.py), so a glyph means one thing
wherever it is drawn: a job's learned peak never reads as memory used outside the slice."""

from __future__ import annotations

import time

from fixed_room import FIGURES, job
from textual.app import App, ComposeResult

from nvml_standin import GIB
from swarmdeck.app import bar_legend
from swarmdeck.app.bar import StackedBar
from swarmdeck.app.detail import memory_legend as job_legend
from swarmdeck.app.detail import memory_segments as job_segments
from swarmdeck.app.hosts import cores_segments, memory_segments, used_segment
from swarmdeck.probes.host import HostSnapshot
from swarmdeck.probes.memory_book import MemoryBook


class OneBar(App[None]):
    def compose(self) -> ComposeResult:
        yield StackedBar()


def _book() -> MemoryBook:
    host = HostSnapshot.from_json(FIGURES)
    book = MemoryBook.from_host_fields(host, FIGURES)
    assert book is not None
    return book


def _glyphs(segments) -> dict[str, str]:
    return {segment.name: segment.glyph for segment in segments}


def test_each_glyph_of_the_legend_has_one_meaning() -> None:
    glyphs = [mark.glyph for mark in bar_legend.MARKS]
    assert len(glyphs) == len(set(glyphs))
    assert all(mark.meaning for mark in bar_legend.MARKS)


def test_the_host_bar_draws_the_slices_use_full_and_what_is_outside_it_shaded() -> None:
    assert _glyphs(memory_segments(_book())) == {
        "outside the slice": "▓",
        "slice used": "█",
        "booked, not yet grown": "▒",
        "room": "░",
    }


def test_a_jobs_peak_is_marked_apart_not_with_the_hosts_glyph_for_outside_the_slice() -> None:
    segments, _total = job_segments(job(7, "pytest", "running", time.time(), current=2 * GIB))
    glyphs = _glyphs(segments)
    assert glyphs == {"now": "█", "peak": "▔", "booked": "▒"}
    outside = _glyphs(memory_segments(_book()))["outside the slice"]
    assert outside not in glyphs.values()


def test_every_bar_draws_only_glyphs_the_legend_explains() -> None:
    legend = {mark.glyph for mark in bar_legend.MARKS}
    segments, _total = job_segments(job(7, "pytest", "running", time.time(), current=2 * GIB))
    drawn = [*memory_segments(_book()), *segments, *cores_segments(3.0), used_segment(GIB)]
    assert {segment.glyph for segment in drawn} <= legend


async def test_a_bar_past_its_segments_draws_the_legends_free() -> None:
    app = OneBar()
    async with app.run_test(size=(20, 3)):
        bar = app.query_one(StackedBar)
        assert bar.render().plain == bar_legend.FREE.glyph * 20


def test_the_job_details_legend_is_the_legends_words() -> None:
    line = job_legend()
    for mark in (bar_legend.IN_USE, bar_legend.PEAK, bar_legend.BOOKED):
        assert mark.glyph in line
    assert "▓" not in line
