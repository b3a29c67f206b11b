"""`enter` on a host card opens its detail view: the memory book's parts and the busy cores
over time, from the readings the app took since it started; `esc` goes back. A peer's card
opens the peer's, read over a real SSH server on 127.0.0.1."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from fixed_room import PEER, fixed_app
from pilot_waits import probed, until

from ssh_server import servers as servers
from ssh_server import write_peer_config
from swarmdeck.app.bar import ScaledSparkline, StackedBar
from swarmdeck.app.gpus import GpuCardView
from swarmdeck.app.history import HostPoint
from swarmdeck.app.host_detail import HostDetail, span_text
from swarmdeck.app.hosts import HostsPanel, card_id
from swarmdeck.app.main import SwarmdeckApp
from swarmdeck.config import load_config
from swarmdeck.probes.host import local_host_name
from swarmdeck.probes.peer_cache import NOT_READ, PeerReading
from swarmdeck.state import StateStore


async def test_enter_on_this_hosts_card_shows_its_memory_book_over_time(
    isolated_home: Path,
) -> None:
    (isolated_home / "config.toml").write_text("[ui]\nrefresh_interval = 0.2\n")
    app = SwarmdeckApp(load_config(), StateStore.open_default())
    async with app.run_test(size=(120, 35)) as pilot:
        await probed(pilot, 3)
        await pilot.press("1", "enter")
        assert isinstance(app.screen, HostDetail)
        assert app.screen.host_name == local_host_name()
        await probed(pilot)
        screen = app.screen
        points = app.history.host(local_host_name())
        assert len(points) >= 4
        main_bar = app.screen_stack[0].query_one(".memory-bar", StackedBar)
        names = [str(screen.query_one(f"#host-part-name-{n}").render()) for n in range(4)]
        assert names == [f"{s.glyph} {s.name}" for s in main_bar.segments]
        slice_used = screen.query_one("#host-part-1", ScaledSparkline)
        assert slice_used.data == tuple(float(p.book[1][1]) for p in points if p.book)
        assert slice_used.top == float(points[-1].slice_cap or 0)
        outside = screen.query_one("#host-part-0", ScaledSparkline)
        assert outside.top == float(points[-1].mem_total)
        busy = screen.query_one("#host-busy", ScaledSparkline)
        assert busy.top == float(points[-1].cores) and len(busy.data) >= 3
        assert f"{len(points)} readings" in str(screen.query_one("#host-span").render())
        await pilot.press("escape")
        assert not isinstance(app.screen, HostDetail)
        assert isinstance(app.focused, HostsPanel)


async def test_down_and_enter_open_the_peers_detail(tmp_path: Path, servers) -> None:
    server = servers()
    write_peer_config(tmp_path, server, server.known_hosts(tmp_path / "known_hosts"))
    (tmp_path / "config.toml").write_text(
        (tmp_path / "config.toml").read_text() + "\n[ui]\nrefresh_interval = 0.3\n"
    )
    app = SwarmdeckApp(load_config(), StateStore.open_default())
    async with app.run_test(size=(120, 35)) as pilot:
        peer = app.config.hosts[0].name
        await until(pilot, lambda: app.history.host(peer), "the peer's first reading")
        await pilot.press("1", "down")
        card = app.query_one(HostsPanel).query(".host-card")[1]
        assert card.has_class("-chosen")
        await pilot.press("enter")
        assert isinstance(app.screen, HostDetail) and app.screen.host_name == peer
        await probed(pilot)
        line = str(app.screen.query_one("#host-line").render())
        assert "cores · load" in line and "slice cap" in line
        figures = str(app.screen.query_one("#host-part-figures-1").render())
        assert figures.startswith(" now ")
        await pilot.press("escape")
        await pilot.press("up", "enter")
        assert isinstance(app.screen, HostDetail)
        assert app.screen.host_name == local_host_name()


async def test_this_hosts_gpu_cards_are_drawn_even_when_a_resize_comes_first(
    isolated_home: Path,
) -> None:
    """The cards from the scripted NVML stand-in (no GPU here), in the fixed room."""
    app = fixed_app(isolated_home)
    async with app.run_test(size=(120, 35)) as pilot:
        await probed(pilot)
        await pilot.press("1", "enter")
        await pilot.resize_terminal(110, 35)
        await pilot.pause()
        cards = app.screen.query(GpuCardView)
        assert len(cards) == 2
        await until(pilot, lambda: "20G/80G used" in str(
            cards[0].query_one(".gpu-memory-figures").render()), "the first card's memory")


async def test_a_peer_that_was_not_read_draws_no_bar_never_room(isolated_home: Path) -> None:
    """A dead host must not look free: its cores and memory bars hold no `░` (the room glyph)
    and say "not read"."""
    app = fixed_app(isolated_home, watched=True)
    room = app.prober()
    dead = PeerReading(PEER, NOT_READ, reason="connection refused", read_at=room.taken_at)
    app.prober = lambda: dataclasses.replace(room, peers=[dead])
    async with app.run_test(size=(120, 35)) as pilot:
        await probed(pilot)
        await pilot.press("1", "down", "enter")
        assert isinstance(app.screen, HostDetail) and app.screen.host_name == PEER
        await probed(pilot)
        screen = app.screen
        assert str(screen.query_one("#host-line").render()) == "not read: connection refused"
        for bar in ("cores", "memory"):
            drawn = str(screen.query_one(f"#host-{bar}", StackedBar).render())
            assert "░" not in drawn and drawn.strip() == "", (bar, drawn)
            assert str(screen.query_one(f"#host-{bar}-figures").render()) == " not read"


def test_the_span_counts_its_readings_as_a_person_writes_them() -> None:
    point = HostPoint(0.0, 2, None, 1 << 30, None)
    assert span_text([]) == "over time: 0 readings since the app started, one per refresh"
    assert span_text([point]) == "over time: 1 reading since the app started, one per refresh"


async def test_a_peers_reason_is_shown_as_written(isolated_home: Path) -> None:
    """Why a peer was not read comes from outside (an SSH error, the peer's own words): its
    brackets are no markup and its control characters are escapes, on the card and in detail."""
    app = fixed_app(isolated_home, watched=True)
    room = app.prober()
    reason = "[Errno 111] [/]refused\x1b[2J"
    dead = PeerReading(PEER, NOT_READ, reason=reason, read_at=room.taken_at)
    app.prober = lambda: dataclasses.replace(room, peers=[dead])
    async with app.run_test(size=(160, 40)) as pilot:
        await probed(pilot)
        shown = "not read: [Errno 111] [/]refused\\x1b[2J"
        card = app.query_one(f"#{card_id(PEER)}")
        assert shown in str(card.content)
        await pilot.press("1", "down", "enter")
        assert isinstance(app.screen, HostDetail) and app.screen.host_name == PEER
        await probed(pilot)
        assert str(app.screen.query_one("#host-line").render()) == shown


async def test_a_full_room_history_tops_out_below_the_bars_used_glyph(
    isolated_home: Path,
) -> None:
    """A slice of a tenth of the machine with nothing in it: its room is the whole slice at
    each reading, the sparkline's full height; drawn ▇, never the bars' █ of memory in use."""
    (isolated_home / "config.toml").write_text(
        '[memory]\nslice = "swarmdeck-test-full-room"\nreserve = "90%"\n'
        "[ui]\nrefresh_interval = 0.2\n"
    )
    app = SwarmdeckApp(load_config(), StateStore.open_default())
    async with app.run_test(size=(120, 35)) as pilot:
        await probed(pilot, 2)
        await pilot.press("1", "enter")
        await probed(pilot)
        room = app.screen.query_one("#host-part-3", ScaledSparkline)
        assert room.data and max(room.data) == room.top
        drawn = room.render().plain
        assert "▇" in drawn and "█" not in drawn, drawn
