"""The control room leaves by itself when its terminal hangs up, instead of spinning on it."""

from __future__ import annotations

import os

from swarmdeck.app.main import SwarmdeckApp
from swarmdeck.app.terminal import hung_up
from swarmdeck.config import load_config
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
