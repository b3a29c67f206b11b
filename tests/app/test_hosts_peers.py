"""Peers in the Hosts panel, read over a real SSH server on 127.0.0.1: a card with the peer's
figures, or "not read" while a peer that never answers is waited for — never a frozen screen."""

from __future__ import annotations

from pathlib import Path

from ssh_server import servers as servers
from ssh_server import write_peer_config
from swarmdeck.app.hosts import HostCard, PeerCard
from swarmdeck.app.main import SwarmdeckApp
from swarmdeck.config import load_config
from swarmdeck.state import StateStore
from waiting import pilot_wait_for


def _card_text(app: SwarmdeckApp) -> str:
    return str(app.query_one(PeerCard).content)


async def test_peer_that_never_answers_shows_not_read_and_this_host_is_not_held_up(
    tmp_path: Path, servers
) -> None:
    server = servers("hang")
    write_peer_config(tmp_path, server, server.known_hosts(tmp_path / "known_hosts"))
    # Long enough that this host's first figures come well before it on a loaded machine.
    text = (tmp_path / "config.toml").read_text().replace("timeout = 8.0", "timeout = 10.0")
    (tmp_path / "config.toml").write_text(text)
    app = SwarmdeckApp(load_config(), StateStore.open_default())
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot_wait_for(pilot, lambda: bool(app.query(PeerCard)), 5)
        await pilot_wait_for(pilot, lambda: app.query_one(HostCard).host is not None, 5)
        # This host's figures are on screen while the peer is still being waited for.
        assert "box2   not read: reading…" in _card_text(app)
        await pilot_wait_for(pilot, lambda: "timed out after 10 s" in _card_text(app), 20)


async def test_peer_that_answers_shows_its_figures(tmp_path: Path, servers) -> None:
    server = servers()
    write_peer_config(tmp_path, server, server.known_hosts(tmp_path / "known_hosts"))
    (tmp_path / "config.toml").write_text(
        (tmp_path / "config.toml").read_text() + "\n[ui]\nrefresh_interval = 0.3\n"
    )
    config = load_config()
    app = SwarmdeckApp(config, StateStore.open_default())
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot_wait_for(pilot, lambda: " cores · load " in _card_text_or_empty(app), 10)
        text = _card_text(app)
        assert "threads free" in text and "slice cap" in text and "room" in text
    assert app.peer_prober is not None and not app.peer_prober.running  # let go on quit


def _card_text_or_empty(app: SwarmdeckApp) -> str:
    return _card_text(app) if app.query(PeerCard) else ""
