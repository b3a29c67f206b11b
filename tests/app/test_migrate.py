"""The migrate pane under Textual's Pilot: `m` on a queued job's row shows each peer's fit now,
the exact command and the toolchain comparison, with Cancel focused; its Migrate button launches
it on the peer (asyncssh's server on 127.0.0.1, the same swarmdeck) detached, and the Jobs panel
shows the job there. A running job is refused, and so is one that is over: `r` reruns it."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "actions"))

from cagekit import SWARMDECK, new_slice, remove_tree
from fixed_room import PEER, fixed_app
from peerkit import start_peer
from textual.widgets import Button

from ledger_rows import add_job
from ssh_server import servers as servers
from swarmdeck.app.detail import JobDetail
from swarmdeck.app.keyed_table import KeyedTable
from swarmdeck.app.main import SwarmdeckApp
from swarmdeck.app.migrate import MigrateScreen, pane_title
from swarmdeck.config import load_config
from swarmdeck.probes.peer import PeerProber
from swarmdeck.snapshot import take_snapshot
from swarmdeck.state import StateStore

MIB = 1 << 20


@pytest.fixture
def v1_slice() -> Iterator[Path]:
    """The peer's slice, of this test's own."""
    path = new_slice()
    try:
        yield path
    finally:
        remove_tree(path)


async def wait_until(pilot, condition, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        await pilot.pause(0.05)


async def test_m_on_a_queued_job_migrates_it_to_the_peer_by_its_button(
    tmp_path: Path, servers, v1_slice: Path
) -> None:
    peer = start_peer(tmp_path, servers, v1_slice)
    config = load_config()
    prober = PeerProber()
    prober.read_all(config)  # the cached reading the pane's fit comes from
    prober.close()
    store = StateStore.open_default()
    queued = add_job(store, label="slow build", state="queued", booked=64 * MIB, cap=96 * MIB,
                     argv='["sh", "-c", "echo moved"]', cwd=str(peer.work))
    app = SwarmdeckApp(config, store, prober=lambda: take_snapshot(config, store))
    async with app.run_test(size=(200, 50)) as pilot:
        table = app.query_one("#jobs-table", KeyedTable)
        await wait_until(pilot, lambda: table.row_count == 1)
        table.focus()
        await pilot.press("m")
        await wait_until(pilot, lambda: isinstance(app.screen, MigrateScreen))
        pane = app.screen
        assert isinstance(pane, MigrateScreen)
        [option] = pane.options
        assert option.fits and option.host == "box2"
        assert option.command.endswith(
            "swarmdeck peer run box2 --detach --label 'slow build' --cap 96M -- sh -c "
            "'echo moved'"
        )
        await wait_until(pilot, lambda: "box2" in pane.differences)
        assert pane.differences["box2"] == []
        assert app.focused is pane.query_one("#cancel", Button)
        await pilot.press("tab")
        assert app.focused is pane.query_one("#migrate-do", Button)
        await pilot.press("enter")
        await wait_until(pilot, lambda: not isinstance(app.screen, MigrateScreen))
        with store.read() as conn:
            moved = conn.execute("SELECT id FROM jobs WHERE host = 'box2'").fetchone()
        assert moved is not None
        await wait_until(pilot, lambda: str(moved["id"]) in table.row_keys)
    with store.read() as conn:
        still = conn.execute("SELECT state FROM jobs WHERE id = ?", (queued,)).fetchone()
    # Its row says it moved; its "runner" (this test) was not signalled: a real runner finds
    # its row moved by itself.
    assert still["state"] == "moved"
    store.close()


async def m_on_the_only_job(tmp_path: Path, **job: object) -> tuple[int, list[str]]:
    """`m` on the one job of a ledger with one peer configured: the job's id and what the app
    said; the migrate pane must not have opened."""
    (tmp_path / "config.toml").write_text('[[hosts]]\nname = "box2"\naddress = "127.0.0.1"\n')
    config = load_config()
    store = StateStore.open_default()
    job_id = add_job(store, **job)
    app = SwarmdeckApp(config, store, prober=lambda: take_snapshot(config, store))
    async with app.run_test(size=(200, 50)) as pilot:
        table = app.query_one("#jobs-table", KeyedTable)
        await wait_until(pilot, lambda: table.row_count == 1)
        table.focus()
        await pilot.press("m")
        await pilot.pause(0.2)
        assert not isinstance(app.screen, MigrateScreen)
        said = [str(n.message) for n in app._notifications]
    store.close()
    return job_id, said


async def test_m_on_a_running_job_refuses_rather_than_run_it_twice(tmp_path: Path) -> None:
    _, said = await m_on_the_only_job(tmp_path, label="x", state="running")
    assert any("would run it twice" in line for line in said)


async def test_m_on_a_job_that_was_killed_says_it_is_over_and_launches_nothing(
    tmp_path: Path,
) -> None:
    killed, said = await m_on_the_only_job(
        tmp_path, label="pytest -n 8 (idle)", state="done", exit_code=143,
        outcome="killed by SIGTERM", ended_at=time.time(),
    )
    assert f"job {killed} is over (killed by SIGTERM): nothing to migrate; r reruns it" in said


async def test_the_migrate_pane_asks_with_cancel_focused_and_enter_alone_moves_nothing(
    isolated_home: Path,
) -> None:
    app = fixed_app(isolated_home, watched=True)
    async with app.run_test(size=(200, 60)) as pilot:
        await pilot.press("2", "down", "m")
        await wait_until(pilot, lambda: isinstance(app.screen, MigrateScreen))
        pane = app.screen
        assert isinstance(pane, MigrateScreen)
        assert app.focused is pane.query_one("#cancel", Button)
        migrate = pane.query_one("#migrate-do", Button)
        assert str(migrate.label) == f"Migrate to {PEER}" and not migrate.disabled
        command = pane.query_one("#migrate-command")
        await pilot.press("enter")
        await wait_until(pilot, lambda: not isinstance(app.screen, MigrateScreen))
        await pilot.pause(0.3)
        assert "launching" not in str(command.render())
        assert not any(PEER in str(n.message) for n in app._notifications)
    app.store.close()


async def test_m_in_read_only_mode_refuses(tmp_path: Path) -> None:
    config = load_config()
    store = StateStore.open_default()
    add_job(store, label="x", state="running")
    app = SwarmdeckApp(config, store, prober=lambda: take_snapshot(config, store), readonly=True)
    async with app.run_test(size=(200, 50)) as pilot:
        table = app.query_one("#jobs-table", KeyedTable)
        await wait_until(pilot, lambda: table.row_count == 1)
        await pilot.press("m")
        await pilot.pause(0.2)
        assert not isinstance(app.screen, MigrateScreen)
    store.close()


def test_the_panes_title_shows_the_label_as_written() -> None:
    """A label is an agent's words: brackets in it are no markup, its controls are escapes."""
    title = pane_title(4, "[/]tests/[a-z]\x1b[31m")
    assert title.plain == "Migrate job 4 ([/]tests/[a-z]\\x1b[31m)"


async def test_a_job_running_on_the_peer_shows_the_peers_cage_memory_and_cores(
    tmp_path: Path, servers, v1_slice: Path
) -> None:
    """A job moved to the peer runs in the peer's cage and ledger: its detail here shows that
    cage, its memory now and peak and its cores as the peer read them, each saying "on box2",
    never `cage –` nor "not sampled while the app ran" while the app watched it run."""
    peer = start_peer(tmp_path, servers, v1_slice)
    go = tmp_path / "go"
    started = subprocess.run(
        [SWARMDECK, "peer", "run", "box2", "--detach", "--label", "moved build", "--cap", "64M",
         "--", "sh", "-c", f"while [ ! -e '{go}' ]; do sleep 0.05; done"],
        cwd=peer.work, capture_output=True, timeout=120,
    )
    assert started.returncode == 0, started.stderr.decode()
    store = StateStore.open_default()
    with store.read() as conn:
        job_id = conn.execute("SELECT id FROM jobs WHERE host = 'box2'").fetchone()["id"]
    app = SwarmdeckApp(load_config(), store)
    try:
        async with app.run_test(size=(160, 45)) as pilot:
            table = app.query_one("#jobs-table", KeyedTable)
            await wait_until(pilot, lambda: table.row_count == 1)
            await pilot.press("2", "enter")
            await wait_until(pilot, lambda: isinstance(app.screen, JobDetail))
            screen = app.screen

            def facts() -> str:
                return str(screen.query_one("#job-facts").render())

            def cores() -> str:
                return str(screen.query_one("#job-cores-figures").render())

            await wait_until(pilot, lambda: "cores in use, most" in cores(), timeout=90)
            shown, cores_shown = facts(), cores()
        assert cores_shown.endswith(" on box2"), cores_shown
        cage = next(line for line in shown.splitlines() if line.strip().startswith("cage"))
        assert cage.split()[1].startswith(str(v1_slice)) and cage.endswith(" on box2"), cage
        memory = next(line for line in shown.splitlines() if line.strip().startswith("memory"))
        now_peak = re.match(r"\s*memory  now (\S+) · peak (\S+) on box2 · booked", memory)
        assert now_peak is not None and "–" not in now_peak.groups(), memory
    finally:
        go.touch()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with store.read() as conn:
                row = conn.execute("SELECT state FROM jobs WHERE id = ?", (job_id,)).fetchone()
            if row["state"] == "done":
                break
            time.sleep(0.1)
        store.close()
