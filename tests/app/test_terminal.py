"""The control room leaves by itself, with 129, when its terminal hangs up, instead of spinning
on it; and a snapshot that reaches it while it ends draws nothing and raises nothing."""

from __future__ import annotations

import os
import threading

from fixed_room import fixed_snapshot

from swarmdeck.app.hosts import HostCard
from swarmdeck.app.main import SwarmdeckApp
from swarmdeck.app.terminal import hung_up
from swarmdeck.config import load_config
from swarmdeck.exitcodes import ExitCode
from swarmdeck.snapshot import Snapshot
from swarmdeck.state import StateStore


def test_an_open_terminal_is_not_hung_up() -> None:
    leader, follower = os.openpty()
    try:
        assert not hung_up(follower)
    finally:
        os.close(leader)
        os.close(follower)


def test_a_terminal_whose_other_side_closed_is_hung_up() -> None:
    leader, follower = os.openpty()
    os.close(leader)
    try:
        assert hung_up(follower)
    finally:
        os.close(follower)


async def test_the_app_quits_when_its_terminal_hangs_up() -> None:
    leader, follower = os.openpty()
    config = load_config()
    app = SwarmdeckApp(config, StateStore.open_default(), terminal=follower)
    try:
        async with app.run_test() as pilot:
            await pilot.pause(0.3)
            assert app.is_running
            os.close(leader)
            for _ in range(100):
                await pilot.pause(0.05)
                if not app.is_running:
                    break
            assert not app.is_running
    finally:
        os.close(follower)
    assert app.return_code == ExitCode.TERMINAL_GONE


async def test_a_snapshot_that_comes_after_exit_draws_nothing() -> None:
    """The probe thread's first round can end just after the app was told to exit (its
    terminal gone, SIGTERM): the Hosts panel, which mounts a card for each new host, must not
    try to mount into a room that is ending (MountError)."""
    store = StateStore.open_default()
    released = threading.Event()

    def first_round_still_running() -> Snapshot:
        released.wait(30)
        raise RuntimeError("the test is over")

    app = SwarmdeckApp(load_config(), store, prober=first_round_still_running)
    try:
        async with app.run_test() as pilot:
            await pilot.pause()
            app.exit(return_code=ExitCode.TERMINAL_GONE)
            app.snapshot = fixed_snapshot(store)
            await pilot.pause()
            assert not app.query(HostCard)
    finally:
        released.set()
    assert app.return_code == ExitCode.TERMINAL_GONE
