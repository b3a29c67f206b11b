"""Which finished jobs `r` reruns with more room, through the launch form, and filled how.

A rerun as declared would end the same way for a job that hit its own cap (250), and for one
that grew past its booking until the shared slice was full (254, over booking): the form opens
with a cap that gives it room, for the person to set first. A 254 that kept to its booking was
not the job's fault, and is rerun as it was.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from swarmdeck.actions.oom import SLICE_FULL_OVER_BOOKING
from swarmdeck.actions.run_request import RunRequest
from swarmdeck.actions.runner import fitting_cap
from swarmdeck.app.commands import rerun_request
from swarmdeck.exitcodes import ExitCode
from swarmdeck.probes.memory_book import LedgerJob
from swarmdeck.sizes import exact_size, format_size


@dataclass(frozen=True)
class MoreRoom:
    """The launch form a rerun opens: what it is filled with, and its title saying why."""

    request: RunRequest
    title: str


def more_room(job: LedgerJob, cap_factor: float) -> MoreRoom | None:
    """The form for rerunning `job` with more room, or None where it is rerun as it was: twice
    the cap after a 250; after a 254 over booking, the --cap its 254 line named (`fitting_cap`
    of its peak), in place of --unbounded."""
    same = rerun_request(job, cap_factor)
    if job.exit_code == ExitCode.OWN_CAP and job.cap:
        return MoreRoom(
            replace(same, cap=exact_size(2 * job.cap), unbounded=False),
            f"Rerun job {job.id}: it hit its own cap of {format_size(job.cap)}",
        )
    grew = job.exit_code == ExitCode.SLICE_FULL and job.outcome == SLICE_FULL_OVER_BOOKING
    if grew and job.peak is not None and job.booked is not None:
        return MoreRoom(
            replace(same, cap=fitting_cap(job.peak), unbounded=False),
            f"Rerun job {job.id}: it grew past its booking of {format_size(job.booked)}"
            f" (peak {format_size(job.peak)})",
        )
    return None
