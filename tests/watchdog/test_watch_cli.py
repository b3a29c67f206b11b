"""`swarmdeck watch`: one pass, JSON, and `--wake`, which exits 0 once a finding concerns its
session, with the finding on stdout."""

from __future__ import annotations

import json
import os
import re
import select
import subprocess
import time

from scene_kit import SID, SWARMDECK, insert_hook_event, write_watchdog_config

DEADLINE = 60.0
OTHER = "9999bbbb-0000-4000-8000-000000000009"


def _heavy_run(store, session: str) -> None:
    insert_hook_event(store, "PostToolUse", time.time(), session_id=session, tool_name="Bash",
                      tool_use_id=f"toolu_{session[:4]}",
                      tool_input={"command": "cargo build --release"})


def _wait_until_passing(proc: subprocess.Popen[str], store) -> None:
    """Until the waker's first pass wrote the lease: from then on, what comes is new to it."""
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        with store.read() as conn:
            if conn.execute("SELECT count(*) FROM watchdog_lease").fetchone()[0]:
                return
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    raise AssertionError("the waker never made a pass")


def test_wake_exits_0_with_the_finding_once_one_concerns_its_session(isolated_home, store):
    write_watchdog_config(isolated_home, interval=0.2, min_duration=0)
    waker = subprocess.Popen(
        [SWARMDECK, "watch", "--wake", "--session", SID], stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )
    try:
        _wait_until_passing(waker, store)
        _heavy_run(store, OTHER)
        time.sleep(1.0)
        assert waker.poll() is None, "a finding of another session does not wake it"
        _heavy_run(store, SID)
        out, err = waker.communicate(timeout=DEADLINE)
    finally:
        if waker.poll() is None:
            waker.kill()
            waker.wait()
    assert waker.returncode == 0, err
    assert "heavy_without_run" in out and "cargo build --release" in out
    assert "swarmdeck run -- CMD" in out
    assert len(out.splitlines()) <= 8
    with store.read() as conn:
        [row] = conn.execute("SELECT id FROM findings WHERE session_id = ?", (SID,)).fetchall()
    assert out.startswith(f"swarmdeck watchdog: finding {row['id']} heavy_without_run"), out


def test_wake_takes_its_session_from_claude_codes_environment(isolated_home, store):
    write_watchdog_config(isolated_home, interval=0.2, min_duration=0)
    waker = subprocess.Popen(
        [SWARMDECK, "watch", "--wake"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, env={**os.environ, "CLAUDE_CODE_SESSION_ID": SID},
    )
    try:
        _wait_until_passing(waker, store)
        _heavy_run(store, SID)
        out, err = waker.communicate(timeout=DEADLINE)
    finally:
        if waker.poll() is None:
            waker.kill()
            waker.wait()
    assert waker.returncode == 0, err
    assert f"session {SID[:8]}" in out


def test_once_json_reports_the_pass_and_its_findings(isolated_home, store):
    write_watchdog_config(isolated_home, min_duration=0)
    _heavy_run(store, SID)
    done = subprocess.run([SWARMDECK, "watch", "--once", "--json"], capture_output=True,
                          text=True, timeout=DEADLINE)
    assert done.returncode == 0, done.stderr
    [line] = done.stdout.splitlines()
    report = json.loads(line)
    assert report["writer"] is True
    assert [f["rule"] for f in report["fired"]] == ["heavy_without_run"]


def test_once_prints_open_findings_for_a_person(isolated_home, store):
    write_watchdog_config(isolated_home, min_duration=0)
    _heavy_run(store, SID)
    done = subprocess.run([SWARMDECK, "watch", "--once"], capture_output=True, text=True,
                          timeout=DEADLINE)
    assert done.returncode == 0, done.stderr
    [line] = done.stdout.splitlines()
    assert "heavy_without_run" in line and "×" not in line, line
    assert re.search(r" \(open for \d+s\)$", line), line


def test_once_names_each_finding_by_the_id_kills_request_takes(isolated_home, store):
    """`kills --request FINDING_ID` refers a person to `watch --once` for the ids."""
    write_watchdog_config(isolated_home, min_duration=0)
    _heavy_run(store, SID)
    done = subprocess.run([SWARMDECK, "watch", "--once"], capture_output=True, text=True,
                          timeout=DEADLINE)
    with store.read() as conn:
        [row] = conn.execute("SELECT id FROM findings").fetchall()
    [line] = done.stdout.splitlines()
    assert line.split()[1:4] == ["finding", str(row["id"]), "[warning]"], line


def test_a_loop_line_names_the_finding_too(isolated_home, store):
    write_watchdog_config(isolated_home, interval=0.2, min_duration=0)
    watcher = subprocess.Popen([SWARMDECK, "watch"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        _wait_until_passing(watcher, store)
        _heavy_run(store, SID)
        assert watcher.stdout is not None
        ready, _, _ = select.select([watcher.stdout], [], [], DEADLINE)
        assert ready, "the loop printed nothing"
        line = watcher.stdout.readline()
    finally:
        watcher.kill()
        watcher.wait()
    with store.read() as conn:
        [row] = conn.execute("SELECT id FROM findings").fetchall()
    assert f" finding {row['id']} [" in line and "heavy_without_run" in line, line


def _first_stderr_line(argv: list[str], env: dict[str, str]) -> str:
    """The first line `swarmdeck ARGV` writes on stderr, read while it still waits."""
    waker = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=env)
    try:
        assert waker.stderr is not None
        ready, _, _ = select.select([waker.stderr], [], [], DEADLINE)
        assert ready, "nothing said on stderr"
        return waker.stderr.readline()
    finally:
        waker.kill()
        waker.wait()


def test_wake_for_any_session_says_what_it_waits_for_on_stderr(isolated_home):
    write_watchdog_config(isolated_home, interval=0.2, min_duration=0)
    env = {key: value for key, value in os.environ.items() if key != "CLAUDE_CODE_SESSION_ID"}
    line = _first_stderr_line([SWARMDECK, "watch", "--wake"], env)
    assert line == "swarmdeck: waiting for a finding to wake any session; Ctrl+C stops\n"


def test_wake_for_one_session_names_it_on_stderr(isolated_home):
    write_watchdog_config(isolated_home, interval=0.2, min_duration=0)
    line = _first_stderr_line([SWARMDECK, "watch", "--wake", "--session", SID], dict(os.environ))
    assert line == f"swarmdeck: waiting for a finding to wake session {SID}; Ctrl+C stops\n"


def _hold_the_lease_elsewhere(store) -> None:
    """The writer's lease held by this test process, standing for the app's watchdog."""
    from swarmdeck.watchdog.findings import new_holder, take_lease

    with store.transaction() as conn:
        assert take_lease(conn, new_holder(), time.time(), 3600.0)


def test_once_json_lists_the_open_findings_when_another_watchdog_writes(isolated_home, store):
    write_watchdog_config(isolated_home, min_duration=0, merge_interval=3600)
    _heavy_run(store, SID)
    first = subprocess.run([SWARMDECK, "watch", "--once"], capture_output=True, text=True,
                           timeout=DEADLINE)
    assert "heavy_without_run" in first.stdout, first.stderr
    _hold_the_lease_elsewhere(store)
    text = subprocess.run([SWARMDECK, "watch", "--once"], capture_output=True, text=True,
                          timeout=DEADLINE)
    done = subprocess.run([SWARMDECK, "watch", "--once", "--json"], capture_output=True,
                          text=True, timeout=DEADLINE)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["writer"] is False
    assert "heavy_without_run" in text.stdout
    assert [f["rule"] for f in report["open"]] == ["heavy_without_run"]


def test_watch_that_only_reads_shows_what_is_open_and_says_so(isolated_home, store):
    write_watchdog_config(isolated_home, interval=0.2, min_duration=0, merge_interval=3600)
    _heavy_run(store, SID)
    subprocess.run([SWARMDECK, "watch", "--once"], capture_output=True, text=True,
                   timeout=DEADLINE)
    _hold_the_lease_elsewhere(store)
    watcher = subprocess.Popen([SWARMDECK, "watch"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(4.0)  # many passes at 0.2 s
    finally:
        watcher.terminate()
        out, err = watcher.communicate(timeout=DEADLINE)
    lines = out.splitlines()
    assert len(lines) == 2, (out, err)
    assert "another watchdog" in lines[0] and "only reads" in lines[0]
    assert "heavy_without_run" in lines[1], "an open finding is shown once, not at every pass"


def test_once_says_what_is_holding_but_not_shown_yet(isolated_home, store):
    """A condition seen in this first pass shows as a finding only once it has held
    `min_duration`: `--once` says it is there and when it shows, not "no open findings"."""
    write_watchdog_config(isolated_home, min_duration=60)
    _heavy_run(store, SID)
    done = subprocess.run([SWARMDECK, "watch", "--once"], capture_output=True, text=True,
                          timeout=DEADLINE)
    assert done.returncode == 0, done.stderr
    [line] = done.stdout.splitlines()
    assert "no open findings" not in line, line
    assert line.startswith("1 condition holding, shows after 60 s"), line
    assert "heavy_without_run" in line, line
