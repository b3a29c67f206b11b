"""The cluster in the control room, read from the real test cluster: a card with one line per
node in the Hosts panel, and the cluster's jobs as rows of the Jobs panel."""

from __future__ import annotations

import time

import pytest
from slurmkit import NODE, SlurmCluster

from swarmdeck.app.jobs import JobsPanel
from swarmdeck.app.keyed_table import KeyedTable
from swarmdeck.app.main import SwarmdeckApp
from swarmdeck.config import load_config
from swarmdeck.state import StateStore
from swarmdeck.views.jobs import PANEL_COLUMNS

pytestmark = pytest.mark.usefixtures("no_job_left")


async def wait_for(pilot, check, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        await pilot.pause(0.05)
        if check():
            return True
    return False


def card_text(app: SwarmdeckApp) -> str:
    cards = app.query("#slurm-cluster")
    return str(cards.first().render()) if cards else ""


def row_keys(app: SwarmdeckApp) -> list[str]:
    table = app.query_one(JobsPanel).query_one(KeyedTable)
    return table.row_keys


async def test_nodes_in_hosts_and_cluster_jobs_in_jobs(slurm_config, slurm_cluster: SlurmCluster):
    slurm_config.write_text(slurm_config.read_text() + "[ui]\nrefresh_interval = 0.3\n")
    text = slurm_cluster.run("sbatch", "--parsable", "--mem=40M", "--job-name=their-build",
                             "--output=/dev/null", "--wrap", "sleep 120")
    slurm_job_id = text.strip().split(";")[0]
    try:
        app = SwarmdeckApp(load_config(), StateStore.open_default())
        async with app.run_test(size=(180, 50)) as pilot:
            assert await wait_for(pilot, lambda: NODE in card_text(app), 15), card_text(app)
            assert "1 nodes" in card_text(app)
            assert "cores" in card_text(app) and "free of 4G" in card_text(app)
            key = f"slurm-{slurm_job_id}"
            assert await wait_for(pilot, lambda: key in row_keys(app), 10), row_keys(app)
            table = app.query_one(JobsPanel).query_one(KeyedTable)
            drawn = map(str, table.get_row(key))
            row = dict(zip([k for k, _ in PANEL_COLUMNS], drawn, strict=True))
            assert row["label"] == "their-build"
            assert row["cap"] == "40M"
    finally:
        slurm_cluster.run("scancel", slurm_job_id)
