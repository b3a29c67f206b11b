"""The 250-or-254 decision: did a caged job die at its own cap, or because the slice was full?

The kernel's oom_kill counter lands on the victim's cgroup in both cases (measured on cgroup v1),
so it only says *that* the job lost a process. *Why* comes from the OOM notifications of the
job's and the slice's own cgroups, with the kernel's high-water marks as a second opinion when
the notifications are mixed or missing. Pure: the backends gather the evidence, this decides.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from swarmdeck.exitcodes import ExitCode

PEAK_TOLERANCE = 1 << 20
"""How close to a limit a high-water mark must come to count as having reached it."""


class OomVerdict(Enum):
    """What the memory cage did to the job, if anything."""

    NONE = "none"
    OWN_CAP = "own cap"
    SLICE_FULL = "slice full"

    @property
    def exit_code(self) -> int | None:
        return {
            OomVerdict.OWN_CAP: ExitCode.OWN_CAP,
            OomVerdict.SLICE_FULL: ExitCode.SLICE_FULL,
        }.get(self)


@dataclass(frozen=True)
class OomEvidence:
    """What the cgroups said about one job's run."""

    job_lost_process: bool
    """The kernel's OOM killer took a process from the job's cgroup during the run."""
    own_cap_ooms: int
    """OOMs at the job's own limit (v2 memory.events.local `oom`; v1 job eventfd count minus
    the slice's, since a slice OOM notifies every descendant too)."""
    slice_ooms: int
    """OOMs at the slice's limit during the run."""
    job_at_cap: bool
    """The job's high-water mark reached its cap."""
    slice_at_cap: bool
    """The slice reached its cap during the run."""


SLICE_FULL_OVER_BOOKING = "slice full, over booking"
"""The ledger's outcome of a slice-full kill whose victim had grown past its own booking."""


def squeezed_out(outcome: str | None) -> bool:
    """Whether a run that ended with this outcome was squeezed out of a full slice past its
    booking: remembered at its ceiling, though it stopped where the slice ran out."""
    return outcome == SLICE_FULL_OVER_BOOKING


def reached_its_cap(hit_ceiling: bool, outcome: str | None) -> bool:
    """Whether a job's (or a recorded run's) peak reached its own cap: it is remembered at its
    ceiling (`hit_ceiling`), and was not squeezed out of a full slice (remembered so too, so
    that its next run books its cap, but stopped where the slice ran out)."""
    return hit_ceiling and not squeezed_out(outcome)


def outgrew_booking(peak: int | None, booked: int) -> bool:
    """Whether a job's peak passed its booking by more than PEAK_TOLERANCE.

    A job killed because the slice was full is blameless only when it kept to what it booked:
    one that grew past it filled the slice with its own growth, and a rerun booked the same
    meets the same kill.
    """
    return peak is not None and peak > booked + PEAK_TOLERANCE


def reached(peak: int | None, limit: int | None) -> bool:
    """True when a high-water mark came within PEAK_TOLERANCE of a limit."""
    return peak is not None and limit is not None and peak >= limit - PEAK_TOLERANCE


def classify_oom(evidence: OomEvidence) -> OomVerdict:
    """Own cap (250) or slice full (254), or NONE when the cage killed nothing."""
    if not evidence.job_lost_process:
        return OomVerdict.NONE
    own, shared = evidence.own_cap_ooms > 0, evidence.slice_ooms > 0
    if own and not shared:
        return OomVerdict.OWN_CAP
    if shared and not own:
        return OomVerdict.SLICE_FULL
    # Mixed or missing notifications: only a job whose high-water mark reached its cap can have
    # hit it. A kill with no sign of that (the slice at its cap, or a machine-wide OOM that no
    # cage notified) was not the job's own doing, and oom_kill alone never says it was.
    if evidence.job_at_cap:
        return OomVerdict.OWN_CAP
    return OomVerdict.SLICE_FULL


def v1_own_cap_ooms(job_notifications: int, slice_notifications: int) -> int:
    """OOMs at the job's own limit from v1 eventfd counts.

    A v1 OOM notifies the cgroup whose limit was hit and every descendant, so the job's counter
    also counts each slice OOM; what is left over happened at the job's own limit.
    """
    return max(0, job_notifications - slice_notifications)
