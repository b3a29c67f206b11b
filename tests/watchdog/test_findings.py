"""Findings are one row per key: counted, shown after their minimum duration, kept open over a
short gap, closed when cleared, opened again in the same row; only the lease holder writes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

from scene_kit import SID, SWARMDECK, insert_hook_event, write_watchdog_config

from swarmdeck.probes.store_rows import open_findings
from swarmdeck.watchdog.findings import (
    FindingDraft,
    lease_holder,
    lease_ttl,
    new_holder,
    record_pass,
    release_lease,
)

DEADLINE = 60.0


def draft(key: str = "rule:subject") -> FindingDraft:
    return FindingDraft(key=key, rule="rule", subject="subject", severity="warning",
                        message="m", advice="a", session_id=SID)


def record(store, drafts, config, holder, now):
    """One pass's drafts recorded in a transaction of their own."""
    with store.transaction() as conn:
        return record_pass(conn, drafts, config, holder, now)


def rows(store):
    with store.read() as conn:
        return [dict(r) for r in conn.execute("SELECT * FROM findings ORDER BY id")]


def test_a_finding_seen_again_raises_its_count_in_the_same_row(isolated_home, store):
    config = write_watchdog_config(isolated_home, min_duration=0).watchdog
    me = new_holder()
    for n in range(3):
        record(store, [draft()], config, me, 1000.0 + n)
    [row] = rows(store)
    assert row["count"] == 3
    assert row["first_seen_at"] == 1000.0 and row["last_seen_at"] == 1002.0


def test_a_finding_shows_only_once_it_held_its_minimum_duration(isolated_home, store):
    config = write_watchdog_config(isolated_home, min_duration=10).watchdog
    me = new_holder()
    first = record(store, [draft()], config, me, 1000.0)
    assert first.fired == [] and open_findings(store) == []
    record(store, [draft()], config, me, 1005.0)
    assert open_findings(store) == []
    fired = record(store, [draft()], config, me, 1010.0)
    assert [f.key for f in fired.fired] == ["rule:subject"]
    assert [f.key for f in open_findings(store)] == ["rule:subject"]
    again = record(store, [draft()], config, me, 1015.0)
    assert again.fired == [], "a finding fires once, not on every pass"


def test_a_short_gap_is_merged_and_a_long_one_closes_then_the_same_row_reopens(
    isolated_home, store
):
    config = write_watchdog_config(isolated_home, min_duration=0, merge_interval=60).watchdog
    me = new_holder()
    record(store, [draft()], config, me, 1000.0)
    record(store, [], config, me, 1030.0)
    assert rows(store)[0]["resolved_at"] is None, "gone for less than merge_interval: still open"
    record(store, [draft()], config, me, 1040.0)
    record(store, [], config, me, 1101.0)
    assert rows(store)[0]["resolved_at"] == 1101.0
    record(store, [draft()], config, me, 1200.0)
    [row] = rows(store)
    assert row["resolved_at"] is None and row["count"] == 3


def test_a_second_writer_only_reads_while_the_lease_is_held(isolated_home, store):
    config = write_watchdog_config(isolated_home, min_duration=0).watchdog
    app, watcher = new_holder(), new_holder()
    assert record(store, [draft()], config, app, 1000.0).writer
    assert not record(store, [draft()], config, watcher, 1000.5).writer
    assert rows(store)[0]["count"] == 1
    release_lease(store, app)
    assert record(store, [draft()], config, watcher, 1001.0).writer
    assert lease_holder(store) == watcher


def _watcher() -> subprocess.Popen[str]:
    return subprocess.Popen(
        [SWARMDECK, "watch", "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, env=os.environ.copy(),
    )


def test_two_watchers_at_once_never_double_a_count(isolated_home, store):
    write_watchdog_config(isolated_home, interval=0.2, min_duration=0)
    insert_hook_event(store, "PostToolUse", time.time(), tool_name="Bash",
                      tool_use_id="toolu_h", tool_input={"command": "make -j8 test"})
    watchers = [_watcher(), _watcher()]
    passes: list[list[dict]] = [[], []]
    try:
        deadline = time.monotonic() + DEADLINE
        while min(len(p) for p in passes) < 6 and time.monotonic() < deadline:
            for proc, seen in zip(watchers, passes, strict=True):
                line = proc.stdout.readline() if len(seen) < 6 else ""
                if line:
                    seen.append(json.loads(line))
    finally:
        for proc in watchers:
            proc.send_signal(signal.SIGINT)
        for proc in watchers:
            proc.wait(timeout=DEADLINE)
    for proc, seen in zip(watchers, passes, strict=True):
        seen.extend(json.loads(line) for line in proc.stdout.read().splitlines())
    assert all(proc.returncode == 0 for proc in watchers), [p.stderr.read() for p in watchers]
    [row] = rows(store)
    writes = sum(1 for seen in passes for p in seen if p["writer"])
    reads = sum(1 for seen in passes for p in seen if not p["writer"])
    assert reads >= 1, "one watcher must have found the lease held"
    # A pass interrupted after its commit but before its line counts without a line: one each.
    assert writes <= row["count"] <= writes + len(watchers)
    assert lease_holder(store) is None, "each watcher lets go of its lease when it stops"


def _job(store, state: str) -> int:
    from ledger_rows import insert_job

    with store.transaction() as conn:
        return insert_job(conn, state=state)


def test_a_finding_whose_job_has_ended_does_not_read_as_open(isolated_home, store):
    config = write_watchdog_config(isolated_home, min_duration=0, merge_interval=3600).watchdog
    me = new_holder()
    ended, running = _job(store, "done"), _job(store, "running")
    drafts = [
        FindingDraft(key=f"rule:job{job}", rule="rule", subject=f"job {job}",
                     severity="warning", message="m", advice="a", job_id=job)
        for job in (ended, running)
    ]
    record(store, drafts, config, me, time.time())
    assert [f.job_id for f in open_findings(store)] == [running]


def test_the_writer_closes_a_finding_whose_job_has_ended_at_once(isolated_home, store):
    config = write_watchdog_config(isolated_home, min_duration=0, merge_interval=3600).watchdog
    me = new_holder()
    job = _job(store, "running")
    seen = FindingDraft(key="rule:job", rule="rule", subject="job", severity="warning",
                        message="m", advice="a", job_id=job)
    record(store, [seen], config, me, 1000.0)
    with store.transaction() as conn:
        conn.execute("UPDATE jobs SET state = 'done' WHERE id = ?", (job,))
    outcome = record(store, [], config, me, 1001.0)
    assert outcome.closed == 1
    [row] = rows(store)
    assert row["resolved_at"] == 1001.0


DAY = 86400.0


def test_a_pass_with_the_clock_days_ahead_leaves_no_finding_open_for_days(isolated_home, store):
    """A pass while the wall clock ran ten days ahead saw a process that has since died; once
    the clock is back, the finding closes after its merge interval, not ten days later."""
    config = write_watchdog_config(isolated_home, min_duration=0, merge_interval=60).watchdog
    me = new_holder()
    record(store, [draft()], config, me, 1000.0)
    record(store, [draft()], config, me, 1000.0 + 10 * DAY)
    record(store, [], config, me, 1010.0)
    [row] = rows(store)
    assert row["resolved_at"] is None, "gone for less than merge_interval: still open"
    assert row["last_seen_at"] <= 1010.0, "a time in the future is taken as now"
    record(store, [], config, me, 1071.0)
    [row] = rows(store)
    assert row["resolved_at"] == 1071.0
    assert row["first_seen_at"] <= 1071.0 and row["fired_at"] <= 1071.0


def test_a_lease_taken_with_the_clock_days_ahead_lasts_its_ttl_not_days(isolated_home, store):
    """A writer that took the lease while the clock ran ahead, and is still there but no longer
    renews it, holds it one lease time once the clock is back, not ten days."""
    config = write_watchdog_config(isolated_home, min_duration=0).watchdog
    stuck, other = new_holder(), new_holder()
    assert record(store, [], config, stuck, 1000.0 + 10 * DAY).writer
    assert not record(store, [], config, other, 1000.0).writer
    ttl = lease_ttl(config)
    assert record(store, [], config, other, 1000.0 + ttl + 1.0).writer


HOLD = ("import sys, time; buf = bytearray(48 << 20); buf[::4096] = b'x' * len(buf[::4096]);"
        " print('ready', flush=True); time.sleep(300)")


def test_a_finding_about_a_process_that_died_after_a_pass_days_ahead_closes(
    isolated_home, store, processes
):
    """End to end through the watchdog's passes, the clock moved by their `now`: a process over
    the resident line is found by a pass ten days ahead, dies, and once the clock is back its
    finding closes after the merge interval."""
    from scene_kit import insert_job

    from swarmdeck.snapshot import take_snapshot
    from swarmdeck.watchdog.loop import Watchdog

    config = write_watchdog_config(
        isolated_home, rss_line="20M", min_duration=0, merge_interval=60
    )
    holder = processes(sys.executable, "-c", HOLD, stdout=subprocess.PIPE)
    assert holder.stdout.readline() == "ready\n"
    insert_job(store, holder.pid, started_at=time.time())
    engine = Watchdog(config, store)
    try:
        now = time.time()
        engine.run_pass(take_snapshot(config, store), now=now + 10 * DAY)
        assert [f.pid for f in open_findings(store)] == [holder.pid]
        holder.kill()
        holder.wait()
        engine.run_pass(take_snapshot(config, store), now=now)
        engine.run_pass(take_snapshot(config, store), now=now + 61)
        assert open_findings(store) == [], "a finding about a dead process stayed open"
    finally:
        engine.close()
