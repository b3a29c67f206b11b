"""A Slurm job's --cap is held to the bounds of a local run's (run_request.checked_cap)."""

from __future__ import annotations

from pathlib import Path

import pytest

from swarmdeck.actions.run_request import RunRequest
from swarmdeck.actions.slurm_run import slurm_booking
from swarmdeck.config import default_config
from swarmdeck.errors import UsageError
from swarmdeck.state import StateStore


def test_a_slurm_cap_too_small_to_start_a_job_in_is_refused(tmp_path: Path) -> None:
    request = RunRequest(argv=["true"], cap="0.5K", cwd=tmp_path)
    with pytest.raises(UsageError, match=r"--cap 0\.5K is under 4M, the least a job can be"):
        slurm_booking(default_config(), StateStore.open_default(), request, 64 * 1024**3)
