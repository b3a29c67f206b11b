"""The Locks panel under Textual's Pilot, with real lock files and real holder processes."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from pilot_waits import probed

from swarmdeck.actions import lock, workdir_claims
from swarmdeck.app.keyed_table import KeyedTable
from swarmdeck.app.locks import LocksPanel
from swarmdeck.app.main import SwarmdeckApp
from swarmdeck.config import load_config
from swarmdeck.probes import locks
from swarmdeck.probes.procs import identity
from swarmdeck.snapshot import Snapshot
from swarmdeck.state import StateStore
from swarmdeck.views.locks import COLUMNS


async def test_held_and_stale_locks_and_owned_directories_are_listed(tmp_path: Path) -> None:
    holder = subprocess.Popen(["sleep", "60"])
    try:
        me = identity(holder.pid)
        assert me is not None
        lock.acquire(tmp_path / "a", session="A", command="make", holder=me)
        stale_file = locks.lock_file_for(tmp_path / "b")
        stale_file.write_text("truncated {")
        work = tmp_path / "work"
        workdir_claims.claim_directory(work / "scratch", session="A", purpose="test copy")

        def prober() -> Snapshot:
            return Snapshot(taken_at=time.time(), hosts=[], locks=locks.lock_rows(work))

        app = SwarmdeckApp(load_config(), StateStore.open_default(), prober=prober)
        async with app.run_test(size=(200, 60)) as pilot:
            await probed(pilot)
            panel = app.query_one(LocksPanel)
            assert panel.border_title == "Locks"
            table = panel.query_one(KeyedTable)
            def row(key: str) -> dict[str, object]:
                return dict(zip([k for k, _ in COLUMNS], map(str, table.get_row(key)), strict=True))

            held = row(f"lock:{locks.lock_file_for(tmp_path / 'a')}")
            assert str(held["state"]) == "held" and held["session"] == "A"
            assert held["pid"] == str(holder.pid)
            stale = row(f"lock:{stale_file}")
            assert str(stale["state"]).startswith("stale: lock file is garbage")
            owned = row(f"dir:{work / 'scratch'}")
            assert str(owned["state"]) == "owned" and owned["what"] == "test copy"
    finally:
        holder.kill()
        holder.wait()
