"""`swarmdeck status` as text: each section's chosen columns, human sizes and ages, no raw JSON."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from io import StringIO
from pathlib import Path

from rich.console import Console

from busy_job import busy_job
from claude_lines import ClaudeTree, Lines
from ledger_rows import add_job as add_ledger_job
from swarmdeck.actions import lock
from swarmdeck.config import load_config
from swarmdeck.probes.gpu import GpuCard, GpuProcess, GpuSnapshot
from swarmdeck.probes.host import host_snapshot
from swarmdeck.probes.locks import lock_rows
from swarmdeck.probes.nvml import READY
from swarmdeck.probes.procs import identity, start_ticks
from swarmdeck.probes.store_rows import open_findings, pending_kill_requests
from swarmdeck.snapshot import Snapshot
from swarmdeck.state import StateStore
from swarmdeck.status_report import ColumnWidths, column_widths, print_status, shared_widths

SWARMDECK = str(Path(sys.executable).with_name("swarmdeck"))
MIB = 1 << 20
SID = "cafe1234-0000-4000-8000-000000000042"


def add_job(store: StateStore, **values: object) -> None:
    add_ledger_job(
        store, argv=["sh", "-c", "make -j4"], booked=40 * MIB, cap=80 * MIB,
        admitted_via="default", oom_score_adj=500, created_at=time.time() - 200, **values,
    )


def add_alert(store: StateStore) -> None:
    with store.transaction() as conn:
        conn.execute(
            "INSERT INTO alerts (key, level, source, host, message, created_at, last_seen_at,"
            " count) VALUES ('queue:vm', 'warning', 'runner', 'vm', 'job 3 queued on memory',"
            " ?, ?, 4)",
            (time.time() - 400, time.time() - 130),
        )


def add_session(home: Path) -> None:
    tree = ClaudeTree(home / "claude")
    main = Lines(SID)
    main.prompt("go", 0)
    main.agent("toolu_outer", "Outer", "Outer work.", 1)
    tree.write_main(main)
    tree.write_pid_file(os.getpid(), SID)


def status_text() -> str:
    result = subprocess.run(
        [SWARMDECK, "status"], capture_output=True, text=True, timeout=60,
        env={**os.environ, "COLUMNS": "250"},
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def section(text: str, title: str) -> str:
    """The lines of one section: from its title to the next title or the end."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(title))
    end = next(
        (i for i in range(start + 1, len(lines)) if lines[i][:1].isalpha()), len(lines)
    )
    return "\n".join(lines[start:end])


def cells(line: str) -> list[str]:
    """A table line's cells, without the lines between them."""
    return [cell.strip() for cell in re.split(r"[│┃]", line) if cell.strip()]


def test_status_shows_chosen_columns_with_sizes_ages_and_cores(isolated_home: Path) -> None:
    store = StateStore.open_default()
    add_session(isolated_home)
    add_alert(store)
    with busy_job(2) as job:
        add_job(
            store, label="hashing", state="running", pid=job.pid, start_ticks=start_ticks(job.pid),
            threads=2, started_at=time.time() - 75,
        )
        add_job(
            store, label="build", state="done", exit_code=250, outcome="own cap",
            peak=80 * MIB, hit_ceiling=1, started_at=time.time() - 190, ended_at=time.time(),
        )
        text = status_text()
    jobs = section(text, "Jobs")
    for label in ("id", "label", "state", "booked", "current", "peak", "cap", "cores",
                  "runtime"):
        assert label in jobs.splitlines()[2], label
    running = next(line for line in jobs.splitlines() if "hashing" in line)
    assert "running" in running and "40M" in running and "80M" in running
    assert re.search(r"\d\.\d cores · \d\.\d/2 thr", running), running
    assert re.search(r"1m[12]\ds", running), running
    done = next(line for line in jobs.splitlines() if "build" in line)
    assert "80M ceiling" in done and "own cap 250" in done and "3m1" in done
    assert "250 own cap" not in done, "the outcome is said once, in the state"

    alerts = section(text, "Alerts")
    alert = next(line for line in alerts.splitlines() if "queued on memory" in line)
    assert "warning" in alert and "2m" in alert and "4" in alert

    agents = section(text, "Agents")
    assert "subagents running/all" in agents
    session = next(line for line in agents.splitlines() if SID[:8] in line)
    assert SID not in session and "/work/proj" in session and "live" in session
    assert re.search(r"\b1/1\b", session), session

    assert "[" not in text, "no raw JSON lists"
    assert not re.search(r"\d{9,}", text), "no raw epoch seconds or byte counts"
    assert "runner_start_ticks" not in text and "oom_score_adj" not in text


def test_gpus_locks_findings_and_kill_requests_have_their_own_columns(
    isolated_home: Path,
) -> None:
    store = StateStore.open_default()
    with store.transaction() as conn:
        conn.execute(
            "INSERT INTO findings (key, rule, subject, severity, message, last_seen_at, count,"
            " fired_at) VALUES ('idle:a1', 'idle', 'agent a1', 'warning', 'no activity for 12m',"
            " ?, 3, ?)",
            (time.time() - 70, time.time() - 70),
        )
        conn.execute(
            "INSERT INTO kill_requests (host, pid, start_ticks, user, command, reason, state,"
            " requested_at) VALUES ('vm', 4242, 99, 'root', 'pytest -x', 'stalled', 'pending', ?)",
            (time.time() - 30,),
        )
    holder = subprocess.Popen(["sleep", "60"])
    try:
        me = identity(holder.pid)
        assert me is not None
        lock.acquire(isolated_home / "repo", session="S1", command="make", holder=me)
        # No GPU on these machines: the card below is scripted data, as NVML would report it.
        card = GpuCard(
            index=0, name="NVIDIA H200", uuid="GPU-1", memory_total=140 << 30,
            memory_used=3 << 30, memory_free=137 << 30, utilization=87, memory_utilization=40,
            temperature=61, processes=[
                GpuProcess(pid=777, used_memory=2 << 30, name="python", user="ml",
                           command="python train.py", allowlisted=False),
            ],
        )
        snapshot = Snapshot(
            taken_at=time.time(), hosts=[host_snapshot(load_config(), store)],
            gpus=GpuSnapshot(state=READY, cards=[card]),
            locks=lock_rows(), findings=open_findings(store),
            kill_requests=pending_kill_requests(store),
        )
        out = StringIO()
        print_status(snapshot, Console(file=out, width=250))
    finally:
        holder.kill()
        holder.wait()
    text = out.getvalue()
    gpu = next(line for line in section(text, "GPUs").splitlines() if "H200" in line)
    assert "3G/140G" in gpu and "87%" in gpu and "61°C" in gpu
    process = next(line for line in section(text, "GPU processes").splitlines() if "777" in line)
    assert "2G" in process and "foreign" in process and "python train.py" in process
    held = next(line for line in section(text, "Locks").splitlines() if "repo" in line)
    assert "held" in held and "S1" in held and str(holder.pid) in held and "make" in held
    finding = next(line for line in section(text, "Watchdog").splitlines() if "idle" in line)
    assert "agent a1" in finding and "no activity for 12m" in finding and "1m" in finding
    kill = next(line for line in section(text, "Kill requests").splitlines() if "4242" in line)
    assert "pytest -x" in kill and "stalled" in kill and "30s" in kill
    assert "no gpu-run holds the cards quiesced" in text
    assert "[" not in text and not re.search(r"\d{9,}", text)


def test_a_job_run_on_a_peer_shows_that_host_in_status(isolated_home: Path) -> None:
    (isolated_home / "config.toml").write_text('[[hosts]]\nname = "box2"\naddress = "127.0.0.1"\n'
                                              "port = 1\ntimeout = 0.5\n")
    store = StateStore.open_default()
    add_job(store, label="moved there", host="box2", state="running")
    store.close()
    jobs = section(status_text(), "Jobs")
    assert "host" in jobs
    [row] = [line for line in jobs.splitlines() if "moved there" in line]
    assert "box2" in row


def test_a_job_whose_runner_died_shows_lost_with_its_exit_code(isolated_home: Path) -> None:
    """Status finds the dead runner, closes the row as lost (255) and says both, as it says the
    code of every other finished job."""
    dead = subprocess.Popen(["true"])
    dead.wait()
    store = StateStore.open_default()
    add_job(store, label="orphan", state="running", runner_pid=dead.pid, runner_start_ticks=1)
    store.close()
    [row] = [line for line in section(status_text(), "Jobs").splitlines() if "orphan" in line]
    assert "lost" in row and "255" in row, row


def test_status_lists_jobs_in_the_control_rooms_order_newest_first(isolated_home: Path) -> None:
    store = StateStore.open_default()
    now = time.time()
    add_job(store, label="first-done", state="done", exit_code=0, ended_at=now - 50)
    with busy_job(1) as job:
        add_job(
            store, label="second-running", state="running", pid=job.pid,
            start_ticks=start_ticks(job.pid), started_at=now - 40,
        )
        add_job(store, label="third-done", state="done", exit_code=0, ended_at=now - 10)
        jobs = section(status_text(), "Jobs")
    store.close()
    shown = [label for line in jobs.splitlines() for label in
             ("first-done", "second-running", "third-done") if label in line]
    assert shown == ["third-done", "second-running", "first-done"], jobs


def test_a_long_label_is_cut_in_a_pipe_so_every_jobs_line_stays_readable(
    isolated_home: Path,
) -> None:
    from swarmdeck.status_report import LABEL_WIDTH

    store = StateStore.open_default()
    add_job(store, label="x" * 300, state="done", exit_code=0, ended_at=time.time())
    add_job(store, label="short one", state="done", exit_code=0, ended_at=time.time())
    store.close()
    env = {key: value for key, value in os.environ.items() if key != "COLUMNS"}
    done = subprocess.run([SWARMDECK, "status"], capture_output=True, text=True, timeout=60,
                          env=env)
    assert done.returncode == 0, done.stderr
    jobs = section(done.stdout, "Jobs")
    assert "x" * (LABEL_WIDTH - 1) + "…" in jobs and "x" * LABEL_WIDTH not in jobs
    assert "short one" in jobs
    assert max(len(line) for line in jobs.splitlines()) < LABEL_WIDTH + 120, jobs


def test_columns_share_a_narrow_width_none_below_its_longest_word() -> None:
    state = column_widths(["state", "cannot start in /work: Permission denied"])
    assert state == ColumnWidths(len("Permission"), len("cannot start in /work: Permission denied"))
    widths = shared_widths([ColumnWidths(2, 2), state, ColumnWidths(7, 7)], 30)
    assert widths is not None and sum(widths) == 30 and widths[1] >= len("Permission")
    assert shared_widths([ColumnWidths(2, 2), ColumnWidths(7, 7)], 30) is None


def test_a_findings_age_is_since_it_first_fired_as_in_the_app(isolated_home: Path) -> None:
    from swarmdeck.app.watchdog import finding_row

    store = StateStore.open_default()
    now = time.time()
    with store.transaction() as conn:
        conn.execute(
            "INSERT INTO findings (key, rule, subject, severity, message, first_seen_at,"
            " last_seen_at, count, fired_at) VALUES ('idle:a1', 'idle', 'agent a1', 'warning',"
            " 'no activity', ?, ?, 16, ?)",
            (now - 540, now - 1, now - 480),
        )
    [finding] = open_findings(store)
    out = StringIO()
    hosts = [host_snapshot(load_config(), store)]
    snapshot = Snapshot(taken_at=now, hosts=hosts, findings=[finding])
    print_status(snapshot, Console(file=out, width=200))
    line = next(line for line in section(out.getvalue(), "Watchdog").splitlines() if "idle" in line)
    assert "8m" in line and "1s" not in line
    assert str(finding_row(finding, now)["age"]) == "8m"


def test_the_watchdog_table_names_each_finding_by_the_id_kills_request_takes(
    isolated_home: Path,
) -> None:
    """Its count of watchdog passes is not shown: how long it has been open (age) says that."""
    store = StateStore.open_default()
    now = time.time()
    with store.transaction() as conn:
        for key in ("idle:a1", "idle:a2"):
            conn.execute(
                "INSERT INTO findings (key, rule, subject, severity, message, first_seen_at,"
                " last_seen_at, count, fired_at) VALUES (?, 'idle', ?, 'warning',"
                " 'no activity', ?, ?, 473, ?)",
                (key, f"agent {key[-2:]}", now - 900, now - 1, now - 840),
            )
    findings = open_findings(store)
    out = StringIO()
    snapshot = Snapshot(taken_at=now, hosts=[host_snapshot(load_config(), store)],
                        findings=findings)
    print_status(snapshot, Console(file=out, width=200))
    table = section(out.getvalue(), "Watchdog").splitlines()
    header = next(line for line in table if "severity" in line)
    assert cells(header)[0] == "id" and "×" not in header, header
    for finding in findings:
        line = next(line for line in table if finding.subject in line)
        assert cells(line)[0] == str(finding.id) and "473" not in line, line


def test_status_without_a_watchdog_does_not_show_an_ended_jobs_finding(
    isolated_home: Path,
) -> None:
    store = StateStore.open_default()
    ended = add_ledger_job(store, state="done", ended_at=time.time() - 300)
    with store.transaction() as conn:
        conn.execute(
            "INSERT INTO findings (key, rule, subject, severity, message, first_seen_at,"
            " last_seen_at, count, fired_at, job_id) VALUES (?, 'output_not_growing', ?,"
            " 'warning', 'its output has not grown for 21m', ?, ?, 4, ?, ?)",
            (f"output_not_growing:job{ended}", f"job #{ended} bg1", time.time() - 900,
             time.time() - 300, time.time() - 900, ended),
        )
    assert "output_not_growing" not in section(status_text(), "Watchdog")
