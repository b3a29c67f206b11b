"""The 250-or-254 verdict from the cgroups' own OOM signals, as a pure decision."""

from __future__ import annotations

import pytest

from swarmdeck.actions.oom import (
    PEAK_TOLERANCE,
    OomEvidence,
    OomVerdict,
    classify_oom,
    outgrew_booking,
    reached,
    v1_own_cap_ooms,
)


def evidence(lost=True, own=0, shared=0, job_at_cap=False, slice_at_cap=False) -> OomEvidence:
    return OomEvidence(lost, own, shared, job_at_cap, slice_at_cap)


def test_nothing_lost_is_no_verdict_whatever_the_slice_saw() -> None:
    assert classify_oom(evidence(lost=False, shared=2, slice_at_cap=True)) is OomVerdict.NONE


def test_an_oom_at_the_jobs_own_limit_is_own_cap() -> None:
    assert classify_oom(evidence(own=1)) is OomVerdict.OWN_CAP


def test_an_oom_at_the_slices_limit_is_slice_full() -> None:
    assert classify_oom(evidence(shared=2)) is OomVerdict.SLICE_FULL


@pytest.mark.parametrize(("own", "shared"), [(0, 0), (1, 1)])
def test_mixed_or_missing_notifications_fall_back_to_the_high_water_marks(own, shared) -> None:
    slice_full = evidence(own=own, shared=shared, slice_at_cap=True)
    assert classify_oom(slice_full) is OomVerdict.SLICE_FULL
    own_cap = evidence(own=own, shared=shared, job_at_cap=True, slice_at_cap=True)
    assert classify_oom(own_cap) is OomVerdict.OWN_CAP


def test_a_kill_with_no_sign_of_the_jobs_own_cap_is_not_exit_250() -> None:
    """oom_kill alone (a machine-wide OOM notifies no cage) never blames the job."""
    assert classify_oom(evidence()) is OomVerdict.SLICE_FULL
    assert classify_oom(evidence(own=1, shared=1)) is OomVerdict.SLICE_FULL
    assert classify_oom(evidence(job_at_cap=True)) is OomVerdict.OWN_CAP


def test_v1_job_notifications_include_the_slices() -> None:
    # Measured here: a slice OOM notified the slice 2 times and each job 2 times.
    assert v1_own_cap_ooms(job_notifications=2, slice_notifications=2) == 0
    assert v1_own_cap_ooms(job_notifications=1, slice_notifications=0) == 1
    assert v1_own_cap_ooms(job_notifications=3, slice_notifications=2) == 1


def test_exit_codes_of_the_verdicts() -> None:
    assert OomVerdict.OWN_CAP.exit_code == 250
    assert OomVerdict.SLICE_FULL.exit_code == 254
    assert OomVerdict.NONE.exit_code is None


def test_reached_allows_a_page_of_slack_below_the_limit() -> None:
    assert reached(100 << 20, 100 << 20)
    assert reached((100 << 20) - 4096, 100 << 20)
    assert not reached(90 << 20, 100 << 20)
    assert not reached(None, 100) and not reached(100, None)


def test_a_peak_past_its_booking_by_more_than_the_tolerance_outgrew_it() -> None:
    booked = 100 << 20
    assert outgrew_booking(300 << 20, booked)
    assert not outgrew_booking(booked + PEAK_TOLERANCE, booked)
    assert not outgrew_booking(booked // 2, booked)
    assert not outgrew_booking(None, booked)
