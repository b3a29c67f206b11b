"""A slice another ledger owns is no cage for this one (a real v1 slice, its owner record naming
another state database): the Hosts card, the host detail and the launch form say that there is
no memory cage and why, in the words `status` and the runner use, never a slice cap or room;
and a launch the runner refuses shows the runner's own reason, not only its exit code."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "actions"))

from cagekit import MIB, new_slice, remove_tree, write_config
from fixed_room import peer_reading
from pilot_waits import probed, until
from textual.widgets import Button, Input

from ledger_rows import add_job
from swarmdeck.actions.cage import open_backend
from swarmdeck.actions.cage.slice_claim import claim_slice
from swarmdeck.app.bar import StackedBar
from swarmdeck.app.host_detail import HostDetail
from swarmdeck.app.hosts import HostCard, peer_text
from swarmdeck.app.launch import LaunchScreen
from swarmdeck.app.main import SwarmdeckApp
from swarmdeck.app.whole_parts import WholeParts
from swarmdeck.config import load_config
from swarmdeck.probes.peer_cache import reading_of
from swarmdeck.probes.slice_owner import slice_problem
from swarmdeck.snapshot import take_snapshot
from swarmdeck.state import StateStore


@pytest.fixture
def owned_elsewhere(isolated_home: Path) -> Iterator[Path]:
    """This home's configured slice, owned by another (existing) ledger."""
    path = new_slice()
    try:
        write_config(isolated_home / "config.toml", path, 256 * MIB)
        other = isolated_home / "other-state" / "state.db"
        other.parent.mkdir()
        other.touch()
        claim_slice(open_backend(str(path)), other, None, 256 * MIB)
        yield path
    finally:
        remove_tree(path)


def _app() -> tuple[SwarmdeckApp, str]:
    """The room on this home's state, and the problem the runner refuses its slice with."""
    config = load_config()
    store = StateStore.open_default()
    problem = slice_problem(config.memory.slice, store.path)
    assert problem.startswith(f"slice {config.memory.slice} belongs to the ledger ")
    return SwarmdeckApp(config, store, prober=lambda: take_snapshot(config, store)), problem


def _text(widget) -> str:
    content = getattr(widget, "content", None)
    return str(content).strip() if isinstance(content, WholeParts) else str(widget.render())


async def test_the_hosts_card_and_host_detail_say_there_is_no_cage_and_why(
    owned_elsewhere: Path,
) -> None:
    app, problem = _app()
    async with app.run_test(size=(400, 40)) as pilot:
        await probed(pilot, 2)
        card = app.query_one(HostCard)
        assert _text(card.query_one(".memory-legend")) == f"✗ no memory cage: {problem}"
        assert _text(card.query_one(".memory-figures")) == " no memory cage"
        assert card.query_one(".memory-bar", StackedBar).rest == "·"
        title = _text(card.query_one(".host-name"))
        assert "slice cap –" in title and "256M" not in title
        await pilot.press("1", "enter")
        assert isinstance(app.screen, HostDetail)
        await probed(pilot)
        detail = app.screen
        assert _text(detail.query_one("#host-cage")) == f"✗ no memory cage: {problem}"
        assert _text(detail.query_one("#host-memory-figures")) == " no memory cage"
        line = _text(detail.query_one("#host-line"))
        assert "slice cap –" in line and "memory room –" in line and "256M" not in line
    app.store.close()


async def test_the_launch_form_says_there_is_no_cage_and_keeps_launch_disabled(
    owned_elsewhere: Path,
) -> None:
    app, problem = _app()
    async with app.run_test(size=(120, 40)) as pilot:
        await probed(pilot)
        await pilot.press("n")
        await until(pilot, lambda: isinstance(app.screen, LaunchScreen), "the launch form")
        form = app.screen
        form.query_one("#launch-command", Input).value = "sleep 30"
        preview = form.query_one("#launch-preview")
        await until(pilot, lambda: "no memory cage" in _text(preview), "the cage's problem")
        assert _text(preview).startswith(f"✗ no memory cage here: {problem}")
        assert "fits now" not in _text(preview)
        assert form.query_one("#do", Button).disabled
    app.store.close()


async def test_a_rerun_the_runner_refuses_shows_the_runners_reason(
    owned_elsewhere: Path, tmp_path: Path
) -> None:
    app, problem = _app()
    add_job(app.store, label="true", state="done", exit_code=0, outcome="ok", argv=["true"],
            cwd=str(tmp_path), cap=None)
    async with app.run_test(size=(120, 40)) as pilot:
        await probed(pilot)
        await pilot.press("2", "r")
        await until(pilot, lambda: app.screen.query("#cancel"), "the rerun modal")
        await pilot.press("tab", "enter")
        said = f"rerun of job 1: not started (exit 251): {problem}"
        await until(pilot, lambda: said in [str(n.message) for n in app._notifications],
                    "the runner's reason")
    app.store.close()


def test_a_peers_card_without_a_cage_says_so_and_offers_no_slice_or_room() -> None:
    fine = peer_reading(0.0)
    problem = "slice /sys/fs/cgroup/memory/swarmdeck belongs to the ledger /a/state.db"
    broken = reading_of(fine.name, {**fine.figures, "slice_backend": "", "slice_problem": problem},
                        0.0)
    text = str(peer_text(broken))
    assert f" · ✗ no memory cage: {problem} · " in text
    # Near the name, so a narrow card leaves out figures before it leaves out this.
    assert text.index("no memory cage") < text.index("slice cap –")
    assert "slice cap –" in text and "memory room –" in text
    assert "slice cap 240G" in str(peer_text(fine))


def _screen_text(app) -> str:
    """The screen as drawn, its lines joined."""
    return "".join(strip.text for strip in app.screen._compositor.render_strips())


def _unboxed(text: str) -> str:
    """The text without the box characters of panel borders, scrollbars and any white space:
    what is left reads the same however the lines wrapped."""
    return "".join(text.translate({ord(c): " " for c in "│┃║╎╏▏▕▁▂▃▄▅▆▇█"}).split())


@pytest.mark.parametrize("size", [(80, 24), (120, 35), (200, 60)])
async def test_the_owners_whole_line_is_shown_at_every_width(
    owned_elsewhere: Path, size: tuple[int, int]
) -> None:
    """The person reads the whole refusal, the owning ledger's path and what to do included,
    however wide the terminal: cut at the panel's edge, it named a ledger nobody could find."""
    app, problem = _app()
    async with app.run_test(size=size) as pilot:
        await probed(pilot, 2)
        await pilot.press("1")
        # Where the panel is shorter than the card, the person scrolls down to the line.
        app.query_one(HostCard).query_one(".memory-legend").scroll_visible(animate=False)
        await pilot.pause()
        shown = _unboxed(_screen_text(app))
        assert _unboxed(problem) in shown, _screen_text(app)
    app.store.close()
