"""`swarmdeck run` end to end: the real command, real cgroup v1 cages, a real state file."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from cagekit import MIB, SWARMDECK, end_session, hog, session_processes, write_config

from ledger_rows import insert_job
from swarmdeck.actions.booking import PastRun, Via, folder_share, mib_ceil
from swarmdeck.actions.jobwatch import EXITED, SIGNALLED, TIMEOUT, StopSignals, Watched
from swarmdeck.actions.oom import OomVerdict
from swarmdeck.actions.reconcile import reconcile
from swarmdeck.actions.run_request import RunRequest
from swarmdeck.actions.runner import RunContext, exit_and_outcome, prepare, rebook
from swarmdeck.cache_settle import SETTLE_NS
from swarmdeck.cli import main
from swarmdeck.config import heavy_thread_budget, load_config
from swarmdeck.probes.cgroups import cgroup_pids
from swarmdeck.probes.host import host_snapshot, local_host_name
from swarmdeck.probes.memory_book import ledger_jobs
from swarmdeck.probes.procs import ProcessIdentity, identity
from swarmdeck.state import StateStore
from waiting import wait_for

SLICE_CAP = 100 * MIB
DEADLINE = 60.0
"""Seconds any awaited condition may take on a loaded 2-core machine before the test fails."""
Start = Callable[..., subprocess.Popen[str]]


@pytest.fixture
def slice_config(isolated_home: Path, v1_slice: Path) -> Path:
    """This test's config: its own slice capped at 100M, jobs book 40M and cap at 80M."""
    write_config(
        isolated_home / "config.toml", v1_slice, SLICE_CAP,
        default_prediction="40M", cap_factor=2.0,
    )
    return v1_slice


def store(home: Path) -> StateStore:
    return StateStore(home / "state" / "state.db")


def rows(home: Path) -> list[sqlite3.Row]:
    with store(home).read() as conn:
        return conn.execute("SELECT * FROM jobs ORDER BY id").fetchall()


def swarmdeck_run(*args: str, **kwargs) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [SWARMDECK, "run", *args], capture_output=True, text=True, timeout=DEADLINE, **kwargs
    )


@pytest.fixture
def start_run(isolated_home: Path, v1_slice: Path) -> Iterator[Start]:
    """Start a runner in its own session, so everything it leaves behind can be found by
    session. After the test, passed or failed, every runner session is killed, and so is any
    runner the ledger still names as active (a detached one lives in a session of its own);
    this runs before the slice's own clean-up, which takes what is left in the cages."""
    started: list[subprocess.Popen[str]] = []

    def start(*args: str) -> subprocess.Popen[str]:
        proc = subprocess.Popen(
            [SWARMDECK, "run", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, start_new_session=True,
        )
        started.append(proc)
        return proc

    yield start
    for proc in started:
        end_session(proc.pid)
    if (isolated_home / "state" / "state.db").exists():
        for row in rows(isolated_home):
            runner = ProcessIdentity(row["runner_pid"] or 0, row["runner_start_ticks"] or 0)
            if row["state"] in ("queued", "admitted", "running") and runner.is_alive():
                with contextlib.suppress(ProcessLookupError):
                    sid = os.getsid(runner.pid)
                    if sid != os.getsid(0):
                        end_session(sid)
    for proc in started:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.communicate(timeout=DEADLINE)


def until_file(path: Path) -> str:
    """A shell loop that waits (at most DEADLINE seconds) for the test to create `path`: the
    job holds its place for exactly as long as the test needs, however slow the machine is."""
    rounds = int(DEADLINE / 0.05)
    return f'i=0; while [ ! -e "{path}" ] && [ $i -lt {rounds} ]; do sleep 0.05; i=$((i+1)); done'


def job_state(home: Path, job_id: int = 1) -> str | None:
    found = [row["state"] for row in rows(home) if row["id"] == job_id]
    return found[0] if found else None


def test_the_commands_own_exit_code_passes_through(slice_config: Path, isolated_home) -> None:
    result = swarmdeck_run("--", "sh", "-c", "echo out; exit 7")
    assert result.returncode == 7
    assert result.stdout == "out\n"
    (row,) = rows(isolated_home)
    assert (row["state"], row["exit_code"], row["outcome"]) == ("done", 7, "exit 7")
    assert row["cgroup"].startswith(str(slice_config))
    assert not Path(row["cgroup"]).exists()


def test_a_run_called_in_process_returns_its_exit_code(slice_config: Path, isolated_home) -> None:
    # Only the console script ends its process right after a run; a caller in-process goes on.
    assert main(["run", "--", "sh", "-c", "exit 7"]) == 7
    (row,) = rows(isolated_home)
    assert (row["state"], row["exit_code"]) == ("done", 7)


NOT_ON_THE_RUN_PATH = {
    "textual", "rich", "asyncssh", "socket", "swarmdeck.app", "swarmdeck.snapshot",
    "swarmdeck.probes.host", "swarmdeck.probes.usage",
}
"""Modules a caged run has no use for: each would add its import time to every heavy command."""


def test_a_run_imports_nothing_it_has_no_use_for(slice_config: Path, isolated_home) -> None:
    done = subprocess.run(
        [sys.executable, "-X", "importtime", SWARMDECK, "run", "--", "true"],
        capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 0, done.stderr
    imported = {
        line.rsplit("|", 1)[1].strip()
        for line in done.stderr.splitlines()
        if line.startswith("import time:")
    }
    assert "swarmdeck.actions.runner" in imported
    assert not imported & NOT_ON_THE_RUN_PATH


OTHER_COMMANDS = {
    f"swarmdeck.cli.{module}" for module in
    ("alerts", "config", "demo", "dispatch", "hooks", "kills", "lock", "peer", "status", "ui",
     "watch")
}
"""The command line's other modules: a run builds its own subcommand's parser alone."""
ONLY_ON_A_RARE_BRANCH = {
    "asyncio", "tomllib",
    "swarmdeck.actions.alerts", "swarmdeck.actions.detach",
    "swarmdeck.actions.slurm_run", "swarmdeck.probes.peer_cache",
}
"""What a job that starts, runs and exits at once never uses: an alert for a queued job that
a peer fits, detach and Slurm for their flags, TOML for a config not cached yet, asyncio for
peers. argparse reads the run's line, and json, pathlib, sqlite3, typing and the exit codes'
enum are the run path's own (issue 33 withdrew the start-up goal that kept them out).
"""


def test_a_run_imports_no_other_command_and_nothing_only_a_rare_branch_needs(
    slice_config: Path, isolated_home
) -> None:
    # A config cache is believed only once written well after the file's last change
    # (cache_settle.SETTLE_NS): the first run after that pause writes it, the second reads it.
    time.sleep(SETTLE_NS / 1e9 + 0.1)
    argv = [sys.executable, "-X", "importtime", SWARMDECK, "run", "--cap", "8M", "--", "true"]
    assert subprocess.run(argv, capture_output=True, timeout=60).returncode == 0
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    imported = {
        line.rsplit("|", 1)[1].strip()
        for line in done.stderr.splitlines()
        if line.startswith("import time:")
    }
    assert {"swarmdeck.actions.runner", "swarmdeck.actions.jobwatch"} <= imported
    assert not imported & (OTHER_COMMANDS | ONLY_ON_A_RARE_BRANCH), sorted(
        imported & (OTHER_COMMANDS | ONLY_ON_A_RARE_BRANCH)
    )


def test_the_row_names_the_jobs_process_threads_and_serial_marker(
    slice_config: Path, isolated_home
) -> None:
    result = swarmdeck_run(
        "--threads", "3", "--", "sh", "-c",
        'echo "serial right now: linking" > "$SWARMDECK_SERIAL_FILE"'
        '; echo "$SWARMDECK_SERIAL_FILE"',
    )
    assert result.returncode == 0, result.stderr
    (row,) = rows(isolated_home)
    assert row["serial_marker_path"] == result.stdout.strip()
    assert Path(row["serial_marker_path"]).parent == isolated_home / "state" / "jobs"
    assert not Path(row["serial_marker_path"]).exists(), "the marker goes with the job"
    assert row["threads"] == 3 and row["pid"] > 0 and row["start_ticks"] > 0


@pytest.mark.parametrize(
    ("args", "adj"), [(["--unbounded"], 1000), ([], 500), (["--cap", "50M"], 0)]
)
def test_the_job_runs_with_the_oom_standing_of_its_booking(
    slice_config: Path, isolated_home, args: list[str], adj: int
) -> None:
    """Unbounded jobs go first, jobs on a prediction next, jobs on their declared cap last."""
    result = swarmdeck_run(*args, "--", "cat", "/proc/self/oom_score_adj")
    assert result.returncode == 0, result.stderr
    assert int(result.stdout) == adj
    (row,) = rows(isolated_home)
    assert row["oom_score_adj"] == adj


def test_job_over_its_own_cap_exits_250_and_the_row_says_it_hit_its_ceiling(
    slice_config: Path, isolated_home
) -> None:
    result = swarmdeck_run("--cap", "30M", "--", *hog(40))
    assert result.returncode == 250, result.stderr
    assert "hit its own memory cap of 30M" in result.stderr
    (row,) = rows(isolated_home)
    assert row["outcome"] == "own cap" and row["hit_ceiling"] == 1
    again = swarmdeck_run("--", *hog(40))
    second = rows(isolated_home)[1]
    assert second["admitted_via"] == "ceiling" and second["booked"] == 30 * MIB
    assert again.returncode == 0, again.stderr


def test_a_job_the_cage_ended_raises_an_alert_and_a_finding_for_its_session(
    slice_config: Path, isolated_home
) -> None:
    """250 and 254 were told only by the exit code: now an alert at once, and the watchdog's
    finding names the session that ran the job, so its `watch --wake` wakes."""
    sid = "5555cccc-0000-4000-8000-000000000005"
    with (isolated_home / "config.toml").open("a") as config:
        config.write("\n[watchdog]\nmin_duration = 0\n")
    env = {**os.environ, "CLAUDE_CODE_SESSION_ID": sid}
    result = swarmdeck_run("--cap", "30M", "--", *hog(40), env=env)
    assert result.returncode == 250, result.stderr
    with store(isolated_home).read() as conn:
        [alert] = conn.execute("SELECT * FROM alerts").fetchall()
    assert alert["key"] == "memory_kill:job1" and "hit its own memory cap" in alert["message"]
    assert sid in alert["message"]
    watched = subprocess.run([SWARMDECK, "watch", "--once", "--json"], capture_output=True,
                             text=True, timeout=DEADLINE)
    assert watched.returncode == 0, watched.stderr
    [finding] = [f for f in json.loads(watched.stdout)["open"] if "job #1 " in f["subject"]]
    assert finding["rule"] == "killed_for_memory" and finding["session_id"] == sid
    assert "exit 250" in finding["message"]


def test_a_rerun_with_a_larger_cap_after_its_ceiling_books_the_new_cap(
    slice_config: Path, isolated_home
) -> None:
    assert swarmdeck_run("--cap", "20M", "--", *hog(40)).returncode == 250
    again = swarmdeck_run("--cap", "60M", "--", *hog(40))
    second = rows(isolated_home)[1]
    assert (second["booked"], second["cap"]) == (60 * MIB, 60 * MIB)
    assert second["admitted_via"] == "ceiling" and second["oom_score_adj"] == 0
    assert again.returncode == 0, again.stderr


def test_the_row_records_the_cap_as_it_was_declared_and_blank_when_none_was(
    slice_config: Path, isolated_home
) -> None:
    """The cap the cage had is not what was declared: 0.03G is written as it was given, and a
    cap made from the booking (40M × 2) is no --cap at all. The row keeps both, and the
    timeout."""
    done = swarmdeck_run("--cap", "0.03G", "--timeout", "30", "--", "true")
    assert done.returncode == 0, done.stderr
    assert swarmdeck_run("--", "sh", "-c", ":").returncode == 0  # no history: booked 40M
    declared, plain = rows(isolated_home)
    assert (declared["declared_cap"], declared["cap"] // MIB) == ("0.03G", 30)
    assert declared["timeout"] == 30.0
    assert (plain["declared_cap"], plain["cap"], plain["timeout"]) == ("", 80 * MIB, None)


def test_when_the_kernel_kills_one_process_the_rest_of_the_tree_is_stopped(
    slice_config: Path, isolated_home, start_run: Start
) -> None:
    """The shell would wait for its `sleep` far longer than the runner is given to end."""
    runner = start_run("--cap", "30M", "--", "sh", "-c", '"$@" & sleep 600', "sh", *hog(60))
    runner.communicate(timeout=DEADLINE)
    assert runner.returncode == 250
    assert session_processes(runner.pid) == []


def squeeze(
    home: Path, start_run: Start, holder_mib: int = 70
) -> tuple[subprocess.Popen[str], subprocess.Popen[str], list[str]]:
    """Two jobs admitted on their bookings in the 100M slice: the holder grows to `holder_mib`
    and holds it, and only then does the grower ask for 50M, so the slice fills, whatever the
    machine's speed, and the kernel takes the bigger one. Both runners, and the holder's
    command (run again, it grows at once)."""
    grow_holder, grow_grower = home / "grow-holder", home / "grow-grower"
    workload = hog(holder_mib, hold=600, after=grow_holder)
    holder = start_run("--label", "holder", "--", *workload)
    wait_for(lambda: job_state(home, 1) == "running")
    grower = start_run("--label", "grower", "--", *hog(50, after=grow_grower))
    wait_for(lambda: job_state(home, 2) == "running")
    grow_holder.touch()
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    grow_grower.touch()
    return holder, grower, workload


def test_the_victim_of_a_full_slice_exits_254_and_the_other_job_does_not(
    slice_config: Path, isolated_home, start_run: Start
) -> None:
    """Both are admitted on their 40M bookings; then the holder grows to 70M of the 100M slice
    and holds it, and only then does the grower ask for 50M: the slice fills, whatever the
    machine's speed, and the kernel takes the bigger one."""
    holder, grower, _ = squeeze(isolated_home, start_run)
    _, holder_err = holder.communicate(timeout=DEADLINE)
    _, grower_err = grower.communicate(timeout=DEADLINE)
    assert holder.returncode == 254, holder_err
    assert "shared slice (100M) was full" in holder_err
    assert re.search(r"grew past its booking \(booked 40M, peak [6-9]\d(\.\d+)?M\)", holder_err)
    assert "not its fault" not in holder_err
    assert grower.returncode == 0, grower_err
    outcomes = {row["label"]: row["outcome"] for row in rows(isolated_home)}
    assert outcomes == {"holder": "slice full, over booking", "grower": "ok"}


def test_a_job_squeezed_out_after_outgrowing_its_booking_is_booked_by_its_cap_next_time(
    slice_config: Path, isolated_home, start_run: Start
) -> None:
    """As in the 254 test above, the holder (booked 40M, capped 80M) grows to 70M and is cut
    off there. Its next run books its cap (80M), as a run that hit its ceiling does, with the
    OOM standing of a cap booking, not the cut-off peak with the standing of a guess; as
    "squeezed", a cap that settles once the job has peaked (the slice ran out, not its cap)."""
    from swarmdeck.actions.booking import decide_booking
    from swarmdeck.actions.jobrecord import past_runs

    holder, grower, _ = squeeze(isolated_home, start_run)
    _, holder_err = holder.communicate(timeout=DEADLINE)
    grower.communicate(timeout=DEADLINE)
    assert holder.returncode == 254, holder_err
    first = rows(isolated_home)[0]
    assert first["outcome"] == "slice full, over booking" and first["hit_ceiling"] == 1
    history = past_runs(store(isolated_home), first["fingerprint"])
    again = decide_booking(history, None, 40 * MIB, 2.0, False, SLICE_CAP)
    assert (again.booked, again.via.value, again.oom_score_adj) == (80 * MIB, "squeezed", 0)


GROW = (
    "import os,sys,time\n"
    "def take(mib):\n"
    "    b=bytearray(int(mib*1048576)); b[::4096]=b'\\1'*len(range(0,len(b),4096)); return b\n"
    "held=[take(float(sys.argv[2]))]\n"
    "print('held',flush=True)\n"
    "end=time.monotonic()+60\n"
    "while len(sys.argv)>4 and not os.path.exists(sys.argv[4]) and time.monotonic()<end:\n"
    "    time.sleep(0.02)\n"
    "held.append(take(float(sys.argv[3])))\n"
    "print('grown',flush=True)\n"
)
"""argv: a name (its family's subcommand), MiB to take at once, MiB to take more once the
file argv[4] exists (at once without it; at most 60 s), then it ends."""


def cage_adjs(home: Path, label: str) -> list[int]:
    """The oom_score_adj of each process in the cage of the job labelled `label`."""
    (row,) = [row for row in rows(home) if row["label"] == label]
    adjs = []
    for pid in cgroup_pids(row["cgroup"]) if row["cgroup"] else []:
        with contextlib.suppress(OSError, ValueError):
            adjs.append(int(Path(f"/proc/{pid}/oom_score_adj").read_text()))
    return adjs


def test_a_full_slice_kills_the_job_past_its_booking_not_a_bigger_one_within_its_own(
    isolated_home: Path, v1_slice: Path, start_run: Start, tmp_path: Path
) -> None:
    """Issue 34 (drifting, second day): a job within its booking was killed because another
    grew past its own. Slice 200M. The keeper books its family's 110M (a prediction, 500) and
    holds it; the grower books the 40M default (500) and grows to 50M, past its booking: its
    runner gives it the standing of a job that takes what nobody booked (1000). When it then
    grows on and the slice fills, the kernel takes the grower, though the keeper is bigger."""
    write_config(isolated_home / "config.toml", v1_slice, 200 * MIB,
                 default_prediction="40M", cap_factor=4.0)
    script = tmp_path / "grow.py"
    script.write_text(GROW)
    seed = swarmdeck_run("--cap", "180M", "--", sys.executable, "-S", str(script), "keeper",
                         "110", "0", cwd=tmp_path)
    assert seed.returncode == 0, seed.stderr
    release, more = tmp_path / "release", tmp_path / "more"
    keeper = subprocess.Popen(
        [SWARMDECK, "run", "--label", "keeper", "--cap", "180M", "--", sys.executable, "-S",
         str(script), "keeper", "110", "0", str(release)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
        cwd=tmp_path,
    )
    try:
        assert keeper.stdout is not None and keeper.stdout.readline() == "held\n"
        grower = start_run("--label", "grower", "--", sys.executable, "-S", str(script),
                           "grower", "50", "70", str(more))
        assert grower.stdout is not None and grower.stdout.readline() == "held\n"
        booked = {row["label"]: row["admitted_via"] for row in rows(isolated_home)}
        assert booked["keeper"] == "family" and booked["grower"] == "default", booked
        wait_for(lambda: cage_adjs(isolated_home, "grower") == [1000],
                 seen=lambda: cage_adjs(isolated_home, "grower"))
        assert cage_adjs(isolated_home, "keeper") == [500]

        def standing() -> dict[str, int]:
            return {row["label"]: row["oom_score_adj"] for row in rows(isolated_home)}

        wait_for(lambda: standing()["grower"] == 1000, seen=standing)
        assert standing()["keeper"] == 500
        more.touch()
        _, grower_err = grower.communicate(timeout=DEADLINE)
        assert grower.returncode == 254, grower_err
        assert "grew past its booking" in grower_err
        release.touch()
        _, keeper_err = keeper.communicate(timeout=DEADLINE)
        assert keeper.returncode == 0, keeper_err
    finally:
        end_session(keeper.pid)
        with contextlib.suppress(subprocess.TimeoutExpired):
            keeper.communicate(timeout=DEADLINE)


def test_an_unbounded_job_killed_after_outgrowing_its_booking_is_not_told_to_rerun_as_is(
    slice_config: Path, isolated_home, start_run: Start
) -> None:
    """The report: the unbounded job books the 40M default and grows to 80M beside a neighbour
    that holds 25M of its 40M; the slice fills with the unbounded job's own growth. A rerun on
    the same booking meets the same kill, so the line names the --cap that would book it."""
    neighbour = start_run("--label", "neighbour", "--cap", "40M", "--", *hog(25, hold=600))
    assert neighbour.stdout is not None and neighbour.stdout.readline() == "held\n"
    grower = start_run("--label", "grower", "--unbounded", "--", *hog(80))
    _, err = grower.communicate(timeout=DEADLINE)
    assert grower.returncode == 254, err
    assert "shared slice (100M) was full" in err
    grew = re.search(r"grew past its booking \(booked 40M, peak ([\d.]+)M\)", err)
    assert grew and float(grew[1]) > 41, err
    assert "not its fault" not in err
    suggested = re.search(r"--cap (\d+)M or more in place of --unbounded", err)
    assert suggested and int(suggested[1]) >= float(grew[1]), err
    states = {row["label"]: (row["state"], row["outcome"]) for row in rows(isolated_home)}
    assert states == {
        "neighbour": ("running", None), "grower": ("done", "slice full, over booking"),
    }


def test_a_victim_that_stayed_within_its_booking_is_told_it_was_not_its_fault(
    isolated_home: Path, v1_slice: Path, start_run: Start
) -> None:
    """The unbounded job holds 10M of its 40M booking; then a process that is no job (put in
    the slice itself, as memory no booking accounts for) takes 85M with oom_score_adj 0 and
    fills the slice. The kernel's victim is the unbounded job (1000): the one that kept to its
    booking. (A job that grew past its own booking to fill the slice would stand at 1000 too,
    and be the victim: actions/outgrown.py.)"""
    write_config(
        isolated_home / "config.toml", v1_slice, SLICE_CAP,
        default_prediction="40M", cap_factor=2.5,
    )
    victim = start_run("--label", "victim", "--unbounded", "--", *hog(10, hold=600))
    assert victim.stdout is not None and victim.stdout.readline() == "held\n"
    joined = f'echo $$ > {v1_slice}/cgroup.procs && echo 0 > /proc/self/oom_score_adj && exec "$@"'
    filler = subprocess.Popen(["sh", "-c", joined, "sh", *hog(85, hold=600)],
                              stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        _, err = victim.communicate(timeout=DEADLINE)
    finally:
        end_session(filler.pid)
        filler.communicate(timeout=DEADLINE)
    assert victim.returncode == 254, err
    assert "shared slice (100M) was full" in err
    assert "stayed within its booking (booked 40M, peak " in err
    assert "not its fault, rerun it" in err
    outcomes = {row["label"]: row["outcome"] for row in rows(isolated_home)}
    assert outcomes == {"victim": "slice full"}


def test_an_unbounded_job_whose_default_prediction_exceeds_the_slice_runs(
    isolated_home: Path, v1_slice: Path
) -> None:
    """It may grow to the whole slice, so it books at most the slice: never refused as a job
    that can never fit because a guess was larger than the slice."""
    write_config(isolated_home / "config.toml", v1_slice, SLICE_CAP, default_prediction="1G")
    result = swarmdeck_run("--unbounded", "--", "true")
    assert result.returncode == 0, result.stderr
    (row,) = rows(isolated_home)
    assert (row["booked"], row["cap"], row["admitted_via"]) == (SLICE_CAP, SLICE_CAP, "default")


def test_a_job_that_can_never_fit_exits_252_at_once(slice_config: Path, isolated_home) -> None:
    """It is refused by the decision that wrote its row, not after queueing for its --wait.

    The row is written refused, with its end time the time it was created; the wall-clock bound
    is loose enough for a loaded machine and still far below the 600 s it was allowed to wait.
    """
    started = time.monotonic()
    result = swarmdeck_run("--cap", "1G", "--wait", "600", "--", "true")
    elapsed = time.monotonic() - started
    assert result.returncode == 252
    assert "can never fit" in result.stderr and "queued" not in result.stderr
    (row,) = rows(isolated_home)
    assert (row["state"], row["exit_code"], row["outcome"]) == ("refused", 252, "never fits")
    assert row["ended_at"] == row["created_at"]
    assert elapsed < 30.0, "refused at once, not after --wait's 600 s"


def hold_the_slice(start_run: Start, home: Path, release: Path) -> subprocess.Popen[str]:
    """A job booking 80M of the 100M slice until `release` exists: room for nothing of 40M."""
    holder = start_run("--cap", "80M", "--", "sh", "-c", until_file(release))
    wait_for(lambda: job_state(home) == "running")
    return holder


def test_waiting_past_wait_exits_252_after_saying_what_it_needs(
    slice_config: Path, isolated_home, start_run: Start
) -> None:
    release = isolated_home / "release"
    holder = hold_the_slice(start_run, isolated_home, release)
    result = swarmdeck_run("--cap", "40M", "--wait", "0.5", "--", "true")
    assert result.returncode == 252
    assert "queued: job 2 needs 40M, room" in result.stderr
    assert "not admitted after" in result.stderr
    assert job_state(isolated_home, 2) == "refused"
    release.touch()
    holder.communicate(timeout=DEADLINE)
    assert holder.returncode == 0


def queue_behind_a_holder(
    start_run: Start, home: Path, release: Path
) -> tuple[subprocess.Popen[str], subprocess.Popen[str]]:
    """The slice held until `release` exists, and a second job of 40M queued behind it."""
    holder = hold_the_slice(start_run, home, release)
    queued = start_run("--cap", "40M", "--wait", "600", "--", "true")
    wait_for(lambda: job_state(home, 2) == "queued")
    return holder, queued


def test_terminating_a_queued_runner_closes_its_row(
    slice_config: Path, isolated_home, start_run: Start
) -> None:
    release = isolated_home / "release"
    holder, queued = queue_behind_a_holder(start_run, isolated_home, release)
    queued.send_signal(signal.SIGTERM)
    _, err = queued.communicate(timeout=DEADLINE)
    assert queued.returncode == 143
    assert "stopped while queued" in err
    (row,) = [row for row in rows(isolated_home) if row["id"] == 2]
    assert (row["state"], row["exit_code"]) == ("refused", 143)
    assert row["started_at"] is None and row["pid"] is None
    release.touch()
    holder.communicate(timeout=DEADLINE)


def test_a_queued_job_starts_when_room_frees_up(
    slice_config: Path, isolated_home, start_run: Start
) -> None:
    release = isolated_home / "release"
    holder, queued = queue_behind_a_holder(start_run, isolated_home, release)
    release.touch()
    _, err = queued.communicate(timeout=DEADLINE)
    assert queued.returncode == 0, err
    holder.communicate(timeout=DEADLINE)
    first, second = rows(isolated_home)
    assert second["admitted_at"] >= first["ended_at"]


def test_timeout_exits_253_and_leaves_no_process_behind(
    slice_config: Path, isolated_home, start_run: Start
) -> None:
    runner = start_run("--timeout", "0.5", "--", "sh", "-c", "sleep 600 & sleep 600 & wait")
    runner.communicate(timeout=DEADLINE)
    assert runner.returncode == 253
    assert session_processes(runner.pid) == []
    (row,) = rows(isolated_home)
    assert row["outcome"] == "timed out"


def test_a_timed_out_job_that_ignores_term_and_forks_through_its_grace_leaves_nothing(
    slice_config: Path, isolated_home, start_run: Start
) -> None:
    """The job ignores TERM (its children inherit that) and starts a child every tenth of a
    second, through the whole grace: the children born after the stop first listed the tree
    are stopped too, and the cage is removed."""
    job = "trap '' TERM; while :; do sleep 600 & sleep 0.1; done"
    runner = start_run("--timeout", "0.5", "--", "sh", "-c", job)
    # Not communicate(): a child left behind would hold the runner's pipes open.
    assert runner.wait(timeout=DEADLINE) == 253
    assert session_processes(runner.pid) == []
    _, err = runner.communicate(timeout=DEADLINE)
    assert "cannot remove cage" not in err
    (row,) = rows(isolated_home)
    assert row["outcome"] == "timed out"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_signalling_the_runner_stops_the_job_tree_and_records_it(
    slice_config: Path, isolated_home, sig: signal.Signals, start_run: Start
) -> None:
    runner = start_run("--", "sh", "-c", "sleep 600 & sleep 600 & wait")
    wait_for(lambda: job_state(isolated_home) == "running")
    wait_for(lambda: len(session_processes(runner.pid)) >= 4)
    runner.send_signal(sig)
    runner.communicate(timeout=DEADLINE)
    assert runner.returncode == 128 + sig
    assert session_processes(runner.pid) == []
    (row,) = rows(isolated_home)
    assert (row["exit_code"], row["outcome"]) == (128 + sig, f"stopped: runner got {sig.name}")


def test_a_runner_killed_outright_is_found_lost_and_nothing_of_its_job_survives(
    slice_config: Path, isolated_home, start_run: Start
) -> None:
    runner = start_run("--", "sh", "-c", "sleep 600 & sleep 600 & wait")
    wait_for(lambda: job_state(isolated_home) == "running")
    wait_for(lambda: len(session_processes(runner.pid)) >= 4)
    runner.kill()
    runner.wait(timeout=DEADLINE)
    (job,) = ledger_jobs(store(isolated_home), local_host_name())
    assert job.state == "running" and job.stale
    assert reconcile(
        store(isolated_home), local_host_name(), load_config().memory.slice
    ) == [job.id]
    (row,) = rows(isolated_home)
    assert (row["state"], row["exit_code"]) == ("lost", 255)
    assert session_processes(runner.pid) == []
    assert not Path(row["cgroup"]).exists()


def test_a_dead_runners_booking_does_not_hold_room(slice_config: Path, isolated_home) -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    with store(isolated_home).transaction() as conn:
        insert_job(conn, label="ghost", runner_pid=dead.pid, runner_start_ticks=1,
                   booked=SLICE_CAP, cap=SLICE_CAP)
    result = swarmdeck_run("--cap", "40M", "--", "true")
    assert result.returncode == 0, result.stderr
    assert [row["state"] for row in rows(isolated_home)] == ["lost", "done"]


def test_what_a_lost_job_left_in_its_cage_is_cleared_even_when_the_next_job_is_refused(
    slice_config: Path, isolated_home
) -> None:
    """The admission that marks a row lost is the only one that ever sees it: it must clear the
    cage then, or the orphans would hold slice memory for good."""
    dead = subprocess.Popen(["true"])
    dead.wait()
    cage = slice_config / f"job-1-{dead.pid}"
    """The name the dead runner gave its job's cage (row 1): only such a cage is cleared."""
    cage.mkdir()
    orphan = subprocess.Popen(
        ["sleep", "600"], start_new_session=True,
        preexec_fn=lambda: (cage / "cgroup.procs").write_text(str(os.getpid())),
    )
    try:
        job = identity(orphan.pid)
        assert job is not None
        with store(isolated_home).transaction() as conn:
            assert insert_job(conn, label="ghost", runner_pid=dead.pid, runner_start_ticks=1,
                              booked=40 * MIB, cap=40 * MIB, cgroup=str(cage), pid=job.pid,
                              start_ticks=job.start_ticks) == 1
        result = swarmdeck_run("--cap", "1G", "--", "true")
        assert result.returncode == 252, result.stderr
        assert [row["state"] for row in rows(isolated_home)] == ["lost", "refused"]
        assert orphan.wait(timeout=DEADLINE) == -signal.SIGTERM
        assert not cage.exists()
    finally:
        orphan.kill()
        orphan.wait()


def test_a_missing_command_exits_127_and_is_recorded(slice_config: Path, isolated_home) -> None:
    result = swarmdeck_run("--", "no-such-command-here")
    assert result.returncode == 127
    assert result.stderr.strip() == "swarmdeck: no-such-command-here: command not found"
    (row,) = rows(isolated_home)
    assert (row["state"], row["exit_code"]) == ("done", 127)


def test_a_file_exec_refuses_exits_126_in_one_line_and_is_recorded(
    slice_config: Path, isolated_home, tmp_path: Path
) -> None:
    script = tmp_path / "no-interpreter-line"
    script.write_text("echo hi\n")
    script.chmod(0o755)
    result = swarmdeck_run("--", str(script))
    assert result.returncode == 126
    assert result.stderr == f"swarmdeck: {script}: cannot execute: Exec format error\n"
    (row,) = rows(isolated_home)
    assert (row["state"], row["exit_code"]) == ("done", 126)


def test_a_directory_given_as_the_command_exits_126_saying_it_is_a_directory(
    slice_config: Path, isolated_home, tmp_path: Path
) -> None:
    result = swarmdeck_run("--", str(tmp_path))
    assert result.returncode == 126
    assert result.stderr == f"swarmdeck: {tmp_path}: Is a directory\n"
    (row,) = rows(isolated_home)
    assert (row["state"], row["exit_code"]) == ("done", 126)


def test_a_directory_given_as_the_command_from_inside_it_is_still_the_command_at_fault(
    slice_config: Path, isolated_home, tmp_path: Path
) -> None:
    result = swarmdeck_run("--", str(tmp_path), cwd=tmp_path)
    assert result.returncode == 126
    assert result.stderr == f"swarmdeck: {tmp_path}: Is a directory\n"


def test_a_run_from_a_removed_folder_is_refused_in_one_line(
    slice_config: Path, isolated_home, tmp_path: Path
) -> None:
    folder = tmp_path / "removed"
    folder.mkdir()
    result = subprocess.run(
        ["sh", "-c", 'cd "$1" && rmdir "$1" && exec "$2" run -- true', "sh", folder, SWARMDECK],
        capture_output=True, text=True, timeout=DEADLINE,
    )
    assert result.returncode == 251
    assert result.stderr == (
        "swarmdeck: the current folder no longer exists: change to one that does and run again\n"
    )
    assert not (isolated_home / "state" / "state.db").exists() or rows(isolated_home) == []


def test_a_stop_signal_ignored_when_the_runner_starts_stays_ignored_for_the_job(
    slice_config: Path, isolated_home
) -> None:
    # `nohup swarmdeck run …`: the person asked for hangups to be ignored, as a shell leaves a
    # signal ignored on entry ignored; catching HUP would stop the job when the terminal goes.
    result = swarmdeck_run(
        "--", "sh", "-c", "grep SigIgn /proc/$$/status",
        preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN),
    )
    assert result.returncode == 0, result.stderr
    ignored = int(result.stdout.split()[1], 16)
    assert ignored & (1 << (signal.SIGHUP - 1))
    assert not ignored & (1 << (signal.SIGTERM - 1))


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--cap", "0", "--", "true"], "no memory at all"),
        (["--cap", "lots", "--", "true"], "not a number with a unit"),
        (["--cap", "99999999999999999999999G", "--", "true"], "the most a size may be"),
        (["--cap", "65T", "--", "true"], "the most a size may be"),
        (["--"], "no command given"),
        ([], "no command given"),
        (["--", ""], "no command given"),
        (["--wait", "nan", "--", "true"], "--wait: nan is not a number of seconds"),
        (["--timeout", "nan", "--", "true"], "--timeout: nan is not a number of seconds"),
        (["--timeout", "0", "--", "true"], "more than 0 seconds"),
        (["--threads", "99999999999999999999", "--", "true"], "give a number from 1 to"),
        (["--threads", "1.5", "--", "true"], "--threads 1.5: give a number from 1 to 65536"),
        (["--threads=1.5", "--label", "x", "--", "true"], "--threads 1.5: give a number"),
        (["--cap", "0.5K", "--", "true"], "--cap 0.5K is under 4M, the least a job"),
        (["--cap", "1M", "--", "true"], "--cap 1M is under 4M, the least a job"),
    ],
)
def test_bad_input_is_one_line_and_exit_251(
    slice_config: Path, isolated_home, args: list[str], says: str
) -> None:
    result = swarmdeck_run(*args)
    assert result.returncode == 251
    assert says in result.stderr and result.stderr.count("\n") == 1
    assert not (isolated_home / "state" / "state.db").exists() or rows(isolated_home) == []


def test_a_cap_beside_unbounded_is_a_usage_error_and_nothing_runs(
    slice_config: Path, isolated_home, tmp_path: Path
) -> None:
    """--unbounded caps the job at the whole slice; a --cap beside it would be thrown away."""
    marker = tmp_path / "ran"
    result = swarmdeck_run("--unbounded", "--cap", "20M", "--", "touch", str(marker))
    assert result.returncode == 251
    assert "--unbounded" in result.stderr and "--cap 20M" in result.stderr
    assert result.stderr.count("\n") == 1
    assert not marker.exists()
    assert not (isolated_home / "state" / "state.db").exists() or rows(isolated_home) == []


def test_with_no_usable_cage_nothing_runs(isolated_home: Path, tmp_path: Path) -> None:
    write_config(isolated_home / "config.toml", tmp_path / "not-a-cgroup" / "slice", SLICE_CAP)
    marker = tmp_path / "ran"
    result = swarmdeck_run("--", "touch", str(marker))
    assert result.returncode == 251
    assert "no memory cage can be set up" in result.stderr
    assert result.stderr.count("\n") == 1
    assert not marker.exists()


def test_a_detached_job_outlives_its_launcher_and_its_exit_code_is_recorded(
    slice_config: Path, isolated_home, start_run: Start
) -> None:
    """The job cannot end before the test releases it, which it does only once the launcher
    has exited: the launcher did not wait for the job, and the job outlived it."""
    release = isolated_home / "release"
    launcher = start_run(
        "--detach", "--", "sh", "-c", f"{until_file(release)}; echo from-job; exit 3"
    )
    out, err = launcher.communicate(timeout=DEADLINE)
    assert launcher.returncode == 0, err
    assert out.startswith("job 1 runs detached; output in ")
    output = Path(out.split("output in ")[1].strip())
    assert job_state(isolated_home) in ("admitted", "running")
    release.touch()
    wait_for(lambda: job_state(isolated_home) == "done")
    (row,) = rows(isolated_home)
    assert row["exit_code"] == 3 and row["detached"] == 1
    assert row["output_path"] == str(output)
    assert output.read_text() == "from-job\n"


@pytest.mark.parametrize(
    ("command", "code", "says"),
    [("no-such-command-here", 127, "command not found"), ("/", 126, "Is a directory")],
)
def test_a_detached_command_that_cannot_start_says_so_at_once_with_its_exit_code(
    slice_config: Path, isolated_home, start_run: Start, command: str, code: int, says: str
) -> None:
    """What a foreground run would say, said by the launcher, and no output file left."""
    launcher = start_run("--detach", "--", command)
    out, err = launcher.communicate(timeout=DEADLINE)
    assert launcher.returncode == code
    assert out == ""
    assert err == f"swarmdeck: {command}: {says}\n"
    (row,) = rows(isolated_home)
    assert (row["state"], row["exit_code"]) == ("done", code)
    assert row["output_path"] is None
    assert not list((isolated_home / "state" / "jobs").glob("job-*.out"))


def test_the_next_run_books_its_learned_peak(slice_config: Path, isolated_home) -> None:
    first = swarmdeck_run("--", *hog(12, hold=0.3))
    assert first.returncode == 0, first.stderr
    swarmdeck_run("--", *hog(12, hold=0.3))
    one, two = rows(isolated_home)
    assert one["admitted_via"] == "default" and one["booked"] == 40 * MIB
    assert 12 * MIB <= one["peak"] < 40 * MIB
    assert one["peak"] <= one["kernel_peak"]
    assert two["admitted_via"] == "history"
    assert one["peak"] < two["booked"] < 40 * MIB
    assert two["oom_score_adj"] == 500


def test_a_command_with_no_history_books_the_prior_of_its_family(
    slice_config: Path, isolated_home, tmp_path: Path
) -> None:
    """`suite tests/a` ran; `suite tests/b` never did: it books the family's peak with its
    margin, well under its declared cap, and stands to be killed first."""
    script = tmp_path / "suite.py"
    script.write_text("import sys\nb = bytearray(12 << 20)\nb[::4096] = b'\\1' * 3072\n")
    first = swarmdeck_run("--cap", "60M", "--", sys.executable, str(script), "suite", "tests/a",
                          cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    second = swarmdeck_run("--cap", "60M", "--", sys.executable, str(script), "suite",
                           "tests/b", cwd=tmp_path)
    assert second.returncode == 0, second.stderr
    one, two = rows(isolated_home)
    assert one["admitted_via"] == "cap" and two["admitted_via"] == "family"
    assert one["peak"] < two["booked"] < 60 * MIB and two["oom_score_adj"] == 500


def test_a_single_run_books_the_margin_its_folders_workloads_repeat_within(
    slice_config: Path, isolated_home, tmp_path: Path
) -> None:
    """Three workloads in a folder ran twice each and peaked alike both times: a fourth, run
    once, books its second run at its peak plus their spread, under the tenth a single run
    books where its folder shows nothing."""
    for hold in (0.01, 0.02, 0.03, 0.01, 0.02, 0.03, 0.04, 0.04):
        done = swarmdeck_run("--", *hog(30, hold=hold), cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    jobs = rows(isolated_home)
    alone, once, again = jobs[3], jobs[6], jobs[7]
    assert alone["admitted_via"] == "history"
    assert alone["booked"] == mib_ceil(jobs[0]["peak"] * 1.1), "no folder spread yet: a tenth"
    assert again["admitted_via"] == "history" and again["oom_score_adj"] == 500
    assert once["peak"] < again["booked"] < mib_ceil(once["peak"] * 1.1)


def test_a_queued_single_run_rebooks_at_its_folders_spread_once_it_shows(
    slice_config: Path, isolated_home, tmp_path: Path
) -> None:
    """Four workloads ran once: the fourth's next run is prepared at its peak + a tenth, and
    while the folder shows no spread, looking again changes nothing. Once three others ran
    twice, a look while it queues books it at their spread, below the tenth."""
    for hold in (0.01, 0.02, 0.03, 0.04):
        done = swarmdeck_run("--", *hog(30, hold=hold), cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    once = rows(isolated_home)[3]
    request = RunRequest(hog(30, hold=0.04), cwd=str(tmp_path))
    config, ledger = load_config(), store(isolated_home)
    prepared = prepare(config, ledger, request, note=lambda line: None)
    assert prepared.booking.via is Via.HISTORY
    assert prepared.booking.booked == mib_ceil(once["peak"] * 1.1)
    signals = StopSignals()
    try:
        run = RunContext(config, ledger, request, prepared, signals, lambda line: None)
        assert rebook(run) is None
        for hold in (0.01, 0.02, 0.03):
            done = swarmdeck_run("--", *hog(30, hold=hold), cwd=tmp_path)
            assert done.returncode == 0, done.stderr
        fresh = rebook(run)
    finally:
        signals.restore()
    assert fresh is not None and fresh.via is Via.HISTORY and fresh.oom_score_adj == 500
    assert once["peak"] < fresh.booked < prepared.booking.booked


def test_a_queued_single_run_rebooks_at_the_growth_its_folder_showed(
    slice_config: Path, isolated_home, tmp_path: Path
) -> None:
    """Issue 34 (drifting): four workloads ran once at 20M; the fourth's next run is prepared
    at its peak + a tenth. Three others then run again at 24M (+20 %, each past its own
    booking): a look while the fourth queues books it that growth, above its tenth, before it
    grows past its booking too."""
    script = tmp_path / "drift.py"
    script.write_text(
        "import sys\nn = int(open(sys.argv[2]).read()) << 20\nb = bytearray(n)\n"
        "b[::4096] = b'\\1' * len(range(0, n, 4096))\n"
    )
    size = tmp_path / "size"
    size.write_text("20")
    for name in ("a", "b", "c", "d"):
        done = swarmdeck_run("--", sys.executable, "-S", str(script), name, str(size),
                             cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    once = rows(isolated_home)[3]
    request = RunRequest([sys.executable, "-S", str(script), "d", str(size)], cwd=str(tmp_path))
    config, ledger = load_config(), store(isolated_home)
    prepared = prepare(config, ledger, request, note=lambda line: None)
    assert prepared.booking.booked == mib_ceil(once["peak"] * 1.1)
    signals = StopSignals()
    try:
        run = RunContext(config, ledger, request, prepared, signals, lambda line: None)
        assert rebook(run) is None
        size.write_text("24")
        for name in ("a", "b", "c"):
            done = swarmdeck_run("--", sys.executable, "-S", str(script), name, str(size),
                                 cwd=tmp_path)
            assert done.returncode == 0, done.stderr
        fresh = rebook(run)
    finally:
        signals.restore()
    assert fresh is not None and fresh.via is Via.HISTORY and fresh.oom_score_adj == 500
    assert fresh.booked > prepared.booking.booked
    assert fresh.booked >= mib_ceil(once["peak"] * 1.1 * 1.1), "a tenth's growth at least"


def test_a_queued_job_of_fiction_rebooks_from_its_family_once_a_member_ended(
    slice_config: Path, isolated_home, tmp_path: Path, start_run: Start
) -> None:
    """`suite tests/a` and `suite tests/b` start together, both booked on their 60M caps: b
    queues. When a ends, having peaked near 12M, b is woken and admitted on the family's
    prior, not the cap it queued with."""
    script = tmp_path / "suite.py"
    script.write_text(
        "import os, sys, time\nb = bytearray(12 << 20)\nb[::4096] = b'\\1' * 3072\n"
        "while len(sys.argv) > 3 and not os.path.exists(sys.argv[3]):\n    time.sleep(0.05)\n"
    )
    go = tmp_path / "go"
    first = start_run("--cap", "60M", "--", sys.executable, str(script), "suite", "tests/a",
                      str(go))
    wait_for(lambda: job_state(isolated_home, 1) == "running")
    second = start_run("--cap", "60M", "--wait", "60", "--", sys.executable, str(script),
                       "suite", "tests/b")
    wait_for(lambda: job_state(isolated_home, 2) == "queued")
    go.touch()
    assert first.wait(timeout=DEADLINE) == 0
    _, err = second.communicate(timeout=DEADLINE)
    assert second.returncode == 0, err
    one, two = rows(isolated_home)
    assert one["admitted_via"] == "cap" and two["admitted_via"] == "family"
    assert two["booked"] < 60 * MIB and two["cap"] == 60 * MIB and two["oom_score_adj"] == 500


def test_a_queued_capped_job_rebooks_from_its_folders_share_of_caps(
    slice_config: Path, isolated_home, tmp_path: Path, start_run: Start
) -> None:
    """Two capped commands ran in the folder, each near 12M of its 60M cap: too few for a
    prior. A third, no history nor family, queues on its 60M cap behind a fourth that holds
    60M; when that one ends (the folder's third capped run), it is admitted on the folder's
    share of its cap (a fifth and a tenth), not the cap."""
    script = tmp_path / "job.py"
    script.write_text(
        "import os, sys, time\nb = bytearray(12 << 20)\nb[::4096] = b'\\1' * 3072\n"
        "while len(sys.argv) > 2 and not os.path.exists(sys.argv[2]):\n    time.sleep(0.05)\n"
    )
    for name in ("one", "two"):
        done = swarmdeck_run("--cap", "60M", "--", sys.executable, str(script), name)
        assert done.returncode == 0, done.stderr
    go = tmp_path / "go"
    holder = start_run("--cap", "60M", "--", sys.executable, str(script), "holder", str(go))
    wait_for(lambda: job_state(isolated_home, 3) == "running")
    late = start_run("--cap", "60M", "--wait", "60", "--", sys.executable, str(script), "new")
    wait_for(lambda: job_state(isolated_home, 4) == "queued")
    go.touch()
    assert holder.wait(timeout=DEADLINE) == 0
    _, err = late.communicate(timeout=DEADLINE)
    assert late.returncode == 0, err
    new = rows(isolated_home)[-1]
    assert new["admitted_via"] == "folder" and new["oom_score_adj"] == 500
    assert new["booked"] < 30 * MIB and new["cap"] == 60 * MIB


def test_a_running_job_of_fiction_gives_back_what_its_folder_shows_it_will_not_take(
    slice_config: Path, isolated_home: Path, tmp_path: Path, start_run: Start
) -> None:
    """Issue 34's first day: a job admitted on its 80M cap (two capped runs in its folder, too
    few to learn from) holds 80M of the 100M slice while it takes a fifth of that. Once a third
    capped run ends, the folder shows how much of their caps its jobs take: the running job
    books that share of its cap, stands where a prediction stands (killed first if it guessed
    wrong), and a job that needs the room is admitted while it still runs."""
    script = tmp_path / "job.py"
    script.write_text(
        "import os, sys, time\nb = bytearray(int(sys.argv[2]) << 20)\n"
        "b[::4096] = b'\\1' * len(range(0, len(b), 4096))\n"
        "while len(sys.argv) > 3 and not os.path.exists(sys.argv[3]):\n    time.sleep(0.05)\n"
    )
    job = [sys.executable, "-S", str(script)]
    for name in ("one", "two"):
        done = swarmdeck_run("--cap", "60M", "--", *job, name, "12")
        assert done.returncode == 0, done.stderr
    go = tmp_path / "go"
    holder = start_run("--cap", "80M", "--", *job, "holder", "12", str(go))
    wait_for(lambda: job_state(isolated_home, 3) == "running")
    third = swarmdeck_run("--cap", "18M", "--", *job, "three", "1")
    assert third.returncode == 0, third.stderr
    needs_room = swarmdeck_run("--cap", "95M", "--wait", "20", "--", *job, "room", "1")
    assert needs_room.returncode == 0, needs_room.stderr
    assert holder.poll() is None, "admitted beside the job that gave room back"
    one, two, held, three, _ = rows(isolated_home)
    share = folder_share([PastRun(row["peak"], row["cap"], False) for row in (one, two, three)])
    assert share is not None
    assert held["admitted_via"] == "folder" and held["oom_score_adj"] == 500
    assert held["booked"] == mib_ceil(80 * MIB * share) and held["cap"] == 80 * MIB
    assert own_oom_score_adj(held["pid"]) == 500
    go.touch()
    assert holder.wait(timeout=DEADLINE) == 0


HOLD_SCRIPT = (
    "import os, sys, time\nb = bytearray(int(sys.argv[2]) << 20)\n"
    "b[::4096] = b'\\1' * len(range(0, len(b), 4096))\n"
    "if os.sep in sys.argv[3]:\n"
    "    while not os.path.exists(sys.argv[3]):\n        time.sleep(0.05)\n"
    "else:\n    time.sleep(float(sys.argv[3]))\n"
)
"""A job that takes argv[2] MiB at once, then holds it for argv[3] seconds or until the file
argv[3] exists."""


def folder_that_peaks_at_once(tmp_path: Path, start_run: Start) -> list[str]:
    """Three runs in the folder, capped at 20M, that each take 12M at once and hold it for
    4 s; the command (HOLD_SCRIPT) for more runs like them."""
    script = tmp_path / "job.py"
    script.write_text(HOLD_SCRIPT)
    job = [sys.executable, "-S", str(script)]
    first = [start_run("--cap", "20M", "--", *job, name, "12", "4") for name in "abc"]
    for proc in first:
        assert proc.wait(timeout=DEADLINE) == 0
    return job


def test_a_running_job_books_its_working_set_once_its_folders_runs_show_it_has_peaked(
    slice_config: Path, isolated_home: Path, tmp_path: Path, start_run: Start
) -> None:
    """Issue 34's first day: the folder's share of their caps still books a job 2–3× its peak.
    Three runs in the folder capped at 20M each took their peak (some 16M) within a second and
    held it for 4 s; a job admitted on that share of its 80M cap holds 2/3 of the slice. Once
    it has run half again as long as they took to peak, with its own working set level, it
    books that working set and 2 %, stands where a prediction stands, and a job that needs
    the room is admitted while it still runs."""
    job = folder_that_peaks_at_once(tmp_path, start_run)
    go = tmp_path / "go"
    holder = start_run("--cap", "80M", "--", *job, "holder", "12", str(go))
    wait_for(lambda: job_state(isolated_home, 4) == "running")
    needs_room = swarmdeck_run("--cap", "70M", "--wait", "20", "--", *job, "room", "1", "0")
    assert needs_room.returncode == 0, needs_room.stderr
    assert holder.poll() is None, "admitted beside the job that gave room back"
    held = rows(isolated_home)[3]
    assert held["admitted_via"] == "settled" and held["oom_score_adj"] == 500
    assert own_oom_score_adj(held["pid"]) == 500
    assert held["booked"] < 30 * MIB and held["cap"] == 80 * MIB
    go.touch()
    assert holder.wait(timeout=DEADLINE) == 0
    held = rows(isolated_home)[3]
    assert held["peak"] <= held["booked"], "it books its working set, with room to spare"
    with store(isolated_home).read() as conn:
        timings = conn.execute("SELECT peak_at, duration FROM peaks ORDER BY job_id").fetchall()
    for peak_at, duration in timings[:3]:
        assert 0 <= peak_at < 1.5 and duration >= 4


def test_a_settled_job_that_grows_past_its_booking_stands_to_be_killed_first(
    slice_config: Path, isolated_home: Path, tmp_path: Path, start_run: Start
) -> None:
    """Settling is a bet on the runs before: a job that grows past its settled booking after
    all stands where a job that may take what nobody booked stands, 1000, so a full slice
    kills it before any job that kept to its booking."""
    folder_that_peaks_at_once(tmp_path, start_run)
    grows = tmp_path / "grows.py"
    grows.write_text(
        "import os, sys, time\n"
        "def take(mib):\n    b = bytearray(mib << 20)\n"
        "    b[::4096] = b'\\1' * len(range(0, len(b), 4096))\n    return b\n"
        "def wait(path):\n    while not os.path.exists(path):\n        time.sleep(0.05)\n"
        "a = take(12)\nwait(sys.argv[1])\nb = take(24)\nwait(sys.argv[2])\n"
    )
    grow, go = tmp_path / "grow", tmp_path / "go"
    holder = start_run("--cap", "80M", "--", sys.executable, "-S", str(grows), str(grow), str(go))
    wait_for(lambda: job_state(isolated_home, 4) == "running")
    wait_for(lambda: rows(isolated_home)[3]["admitted_via"] == "settled")
    assert rows(isolated_home)[3]["oom_score_adj"] == 500
    grow.touch()
    wait_for(lambda: rows(isolated_home)[3]["oom_score_adj"] == 1000)
    assert own_oom_score_adj(rows(isolated_home)[3]["pid"]) == 1000
    go.touch()
    assert holder.wait(timeout=DEADLINE) == 0


def test_a_rerun_after_a_squeeze_books_its_cap_and_gives_it_back_once_it_has_peaked(
    isolated_home: Path, v1_slice: Path, tmp_path: Path, start_run: Start
) -> None:
    """Issue 34's drifting day: a job squeezed out of a full slice books its cap next time (90M
    here: 30M bookings, caps three times that), but the slice ran out there, not its cap.
    Once it has peaked as the folder's three 8 s runs did, it books its working set; the
    squeeze neither stops that nor times it, and a job that needs 15M is let in while the
    rerun still runs. Before, the rerun held its whole cap to its end, and the job waited 20 s
    for the 10M left beside it."""
    write_config(isolated_home / "config.toml", v1_slice, SLICE_CAP,
                 default_prediction="30M", cap_factor=3.0)
    holder, grower, workload = squeeze(isolated_home, start_run, holder_mib=60)
    assert holder.wait(timeout=DEADLINE) == 254
    assert grower.wait(timeout=DEADLINE) == 0
    script = tmp_path / "job.py"
    script.write_text(HOLD_SCRIPT)
    job = [sys.executable, "-S", str(script)]
    for proc in [start_run("--cap", "20M", "--", *job, name, "12", "8") for name in "abc"]:
        assert proc.wait(timeout=DEADLINE) == 0
    again = start_run("--label", "again", "--", *workload)
    wait_for(lambda: job_state(isolated_home, 6) == "running")
    rerun = rows(isolated_home)[5]
    assert (rerun["booked"], rerun["admitted_via"], rerun["oom_score_adj"]) == (
        90 * MIB, "squeezed", 0)
    needs_room = swarmdeck_run("--cap", "15M", "--wait", "20", "--", *hog(2))
    assert needs_room.returncode == 0, needs_room.stderr
    assert again.poll() is None, "let in beside the rerun, in the room its cap gave back"
    rerun = rows(isolated_home)[5]
    assert rerun["admitted_via"] == "settled" and rerun["oom_score_adj"] == 500
    assert rerun["booked"] < 90 * MIB


@pytest.mark.parametrize("second_mib", [20, 8], ids=["as much again", "less than before"])
def test_a_second_run_gives_back_its_tenth_once_it_has_peaked_as_its_folders_runs_did(
    slice_config: Path, isolated_home: Path, tmp_path: Path, start_run: Start, second_mib: int
) -> None:
    """Issue 34's second day: a workload with a single run books its peak and a tenth, for a
    peak this run may still reach. Once it has reached it as its folder's three runs reached
    theirs, it books its working set and 2 %, never under its first run's peak (a run that
    has taken less so far may still take that), and stands where a prediction stands."""
    script = tmp_path / "job.py"
    script.write_text(HOLD_SCRIPT.replace("int(sys.argv[2])", "int(open(sys.argv[2]).read())"))
    size, go = tmp_path / "size", tmp_path / "go"
    size.write_text("20")
    job = [sys.executable, "-S", str(script)]
    first = [start_run("--cap", "28M", "--", *job, name, str(size), str(go)) for name in "abc"]
    wait_for(lambda: [row["state"] for row in rows(isolated_home)] == ["running"] * 3)
    time.sleep(3)
    go.touch()
    for proc in first:
        assert proc.wait(timeout=DEADLINE) == 0
    go.unlink()
    size.write_text(str(second_mib))
    again = start_run("--cap", "28M", "--", *job, "a", str(size), str(go))
    wait_for(lambda: job_state(isolated_home, 4) == "running")
    learned = rows(isolated_home)[3]
    assert learned["admitted_via"] == "history"
    wait_for(lambda: rows(isolated_home)[3]["admitted_via"] == "settled")
    settled = rows(isolated_home)[3]
    go.touch()
    assert again.wait(timeout=DEADLINE) == 0
    [before] = [row["peak"] for row in rows(isolated_home)[:3] if json.loads(row["argv"])[3] == "a"]
    least = max(before, rows(isolated_home)[3]["peak"])
    assert least <= settled["booked"] <= mib_ceil(least * 1.02) < learned["booked"]
    assert settled["oom_score_adj"] == 500


def test_a_run_remembers_when_its_working_set_reached_its_peak(
    slice_config: Path, isolated_home: Path, tmp_path: Path
) -> None:
    """A job that takes 8M, then 24M more two seconds later, then holds it a second: its
    peak is recorded at two seconds or after, not at its first step."""
    script = tmp_path / "steps.py"
    script.write_text(
        "import time\na = bytearray(8 << 20)\na[::4096] = b'\\1' * len(range(0, len(a), 4096))\n"
        "time.sleep(2)\nb = bytearray(24 << 20)\nb[::4096] = b'\\1' * len(range(0, len(b), 4096))\n"
        "time.sleep(1)\n"
    )
    done = swarmdeck_run("--cap", "60M", "--", sys.executable, "-S", str(script))
    assert done.returncode == 0, done.stderr
    with store(isolated_home).read() as conn:
        peak_at, duration = conn.execute("SELECT peak_at, duration FROM peaks").fetchone()
    assert 2.0 <= peak_at < duration


def own_oom_score_adj(pid: int) -> int:
    return int(Path(f"/proc/{pid}/oom_score_adj").read_text())


def holds_flock(pid: int, path: Path) -> bool:
    """Whether process `pid` holds a flock() on `path`, as /proc/locks lists it."""
    inode = path.stat().st_ino if path.exists() else -1
    for line in Path("/proc/locks").read_text().splitlines():
        fields = line.split()
        if "FLOCK" in fields and str(pid) in fields:
            device_inode = fields[fields.index(str(pid)) + 1]
            if device_inode.rsplit(":", 1)[-1] == str(inode):
                return True
    return False


def test_a_locked_state_file_makes_the_runner_wait_not_lose_its_row(
    slice_config: Path, isolated_home, start_run: Start
) -> None:
    """The state file stays locked until the runner is seen at its admission decision, which it
    can only make once the lock is given back."""
    assert swarmdeck_run("--", "true").returncode == 0
    db = isolated_home / "state" / "state.db"
    blocker = sqlite3.connect(db, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    try:
        runner = start_run("--", "sh", "-c", "exit 5")
        wait_for(lambda: holds_flock(runner.pid, Path(f"{db}.admission")))
        time.sleep(0.3)
        assert runner.poll() is None
        assert len(rows(isolated_home)) == 1
    finally:
        blocker.execute("COMMIT")
        blocker.close()
    runner.communicate(timeout=DEADLINE)
    assert runner.returncode == 5
    assert [row["exit_code"] for row in rows(isolated_home)] == [0, 5]


def most_booked_at_once(spans: list[tuple[float, float, int]]) -> int:
    """The largest sum of bookings whose spans overlap at one instant."""
    return max(sum(booked for a, b, booked in spans if a <= start <= b) for start, _, _ in spans)


def test_thirty_concurrent_runners_never_book_more_than_the_slice(
    isolated_home: Path, v1_slice: Path, start_run: Start
) -> None:
    """Booked bytes are summed from the ledger, and over the cages seen occupied in the slice.

    The first jobs hold their cages until every runner has asked for room and the slice is
    fully booked, so the other 25 really contend for it. A cage is only ever seen holding
    processes while it really does, so the overlap of the seen spans can only understate what
    was occupied at once, never overstate it. Once the first runs have recorded their peaks
    the rest book less than their cap, so more than slice/cap of them may run at once; what
    never grows past the slice is the sum booked.
    """
    # Five caps and a little: what the kernel charges the slice beyond its jobs' own use (page
    # tables, the cages' shells) must not decide whether the fifth job fits.
    cap, slice_cap = 24 * MIB, 128 * MIB
    full = slice_cap // cap * cap
    write_config(isolated_home / "config.toml", v1_slice, slice_cap)
    store(isolated_home).close()
    release = isolated_home / "release"
    job = ["sh", "-c", f'{until_file(release)}; exec "$@"', "sh", *hog(4, hold=0.2)]
    most_booked = 0
    seen: dict[str, list[float]] = {}
    done = threading.Event()

    def sample() -> None:
        nonlocal most_booked
        conn = sqlite3.connect(isolated_home / "state" / "state.db", timeout=30)
        while not done.is_set():
            booked = conn.execute(
                "SELECT COALESCE(SUM(booked), 0) FROM jobs WHERE state IN ('admitted', 'running')"
            ).fetchone()[0]
            most_booked = max(most_booked, booked)
            for cage in v1_slice.iterdir():
                if cage.is_dir() and cgroup_pids(cage):
                    span = seen.setdefault(cage.name, [time.monotonic()] * 2)
                    span[1] = time.monotonic()
            time.sleep(0.005)
        conn.close()

    def all_asked_and_slice_full() -> bool:
        ended = [runner for runner in runners if runner.poll() is not None]
        assert not ended, f"a runner ended before any job could: {ended[0].communicate()}"
        states = [row["state"] for row in rows(isolated_home)]
        return len(states) == 30 and states.count("running") >= slice_cap // cap

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        runners = [start_run("--cap", "24M", "--wait", "90", "--", *job) for _ in range(30)]
        wait_for(all_asked_and_slice_full, seen=lambda: [
            (row["state"], row["booked"]) for row in rows(isolated_home)
        ])
        release.touch()
        codes = [runner.wait(timeout=100) for runner in runners]
    finally:
        done.set()
        sampler.join()
    assert codes == [0] * 30
    assert full <= most_booked <= slice_cap
    finished = rows(isolated_home)
    booked = {Path(row["cgroup"]).name: row["booked"] for row in finished}
    in_cages = most_booked_at_once([(a, b, booked[name]) for name, (a, b) in seen.items()])
    assert full <= in_cages <= slice_cap
    assert len(finished) == 30 and {row["state"] for row in finished} == {"done"}
    for row in finished:
        at = row["admitted_at"]
        overlapping = [r["booked"] for r in finished if r["admitted_at"] <= at < r["ended_at"]]
        assert sum(overlapping) <= slice_cap
    assert int((v1_slice / "memory.max_usage_in_bytes").read_text()) <= slice_cap


def test_exit_codes_follow_the_contract() -> None:
    def watched(code: int, ended_by: str = EXITED, signum: int | None = None) -> Watched:
        return Watched(code, ended_by, signum, 0, 1.0, 0.0)

    assert exit_and_outcome(watched(0), OomVerdict.NONE) == (0, "ok")
    assert exit_and_outcome(watched(3), OomVerdict.NONE) == (3, "exit 3")
    assert exit_and_outcome(watched(-9), OomVerdict.OWN_CAP) == (250, "own cap")
    assert exit_and_outcome(watched(-9), OomVerdict.SLICE_FULL) == (254, "slice full")
    assert exit_and_outcome(watched(-9), OomVerdict.SLICE_FULL, outgrew=True) == (
        254, "slice full, over booking"
    )
    assert exit_and_outcome(watched(-9), OomVerdict.OWN_CAP, outgrew=True) == (250, "own cap")
    assert exit_and_outcome(watched(-15, TIMEOUT), OomVerdict.NONE) == (253, "timed out")
    assert exit_and_outcome(watched(-11), OomVerdict.NONE) == (139, "killed by SIGSEGV")
    assert exit_and_outcome(watched(-15, SIGNALLED, 2), OomVerdict.NONE)[0] == 130


def test_the_run_scope_declaration_is_kept_with_the_job_and_shown(
    slice_config: Path, isolated_home
) -> None:
    """`SWARMDECK_SCOPE='…' swarmdeck run -- CMD` (the run-scope guard's form): the row keeps
    the declaration, the job's detail shows it; a run without one keeps NULL."""
    from swarmdeck.app.detail import job_facts
    from swarmdeck.probes.memory_book import ledger_jobs

    scope = "kind=full; what=all tests; scope=repo; why=before the merge of the parser"
    env = {**os.environ, "SWARMDECK_SCOPE": scope}
    assert swarmdeck_run("--", "true", env=env).returncode == 0
    plain = {k: v for k, v in os.environ.items() if k != "SWARMDECK_SCOPE"}
    assert swarmdeck_run("--", "true", env=plain).returncode == 0
    declared, bare = rows(isolated_home)
    assert (declared["scope"], bare["scope"]) == (scope, None)
    jobs = ledger_jobs(store(isolated_home), declared["host"], finished=None, runners=False)
    shown = job_facts(next(j for j in jobs if j.id == declared["id"]), time.time(), 200).plain
    assert f"scope  {scope}" in shown, shown


def test_a_run_without_threads_declares_the_hosts_heavy_threads(
    slice_config: Path, isolated_home
) -> None:
    """No --threads: the job declares this host's heavy threads (cores.heavy_threads, else
    cores less one), so the book of threads counts it; a given --threads stands."""
    config = isolated_home / "config.toml"
    config.write_text(config.read_text() + "\n[cores]\nheavy_threads = 3\n")
    assert swarmdeck_run("--", "true").returncode == 0
    assert swarmdeck_run("--threads", "2", "--", "true").returncode == 0
    assert [row["threads"] for row in rows(isolated_home)] == [3, 2]


def test_more_threads_than_the_hosts_budget_get_one_warning_line(
    slice_config: Path, isolated_home
) -> None:
    """`--threads 16` on 2 cores runs, but says that its threads will share the cores, and how
    the Hosts panel then reads the budget: the budget the panel reads (cores.heavy_threads,
    else the cores less one), not the cores."""
    budget = heavy_thread_budget(0, os.cpu_count() or 1)
    many = swarmdeck_run("--threads", str(budget * 8), "--", "true")
    assert many.returncode == 0, many.stderr
    lines = [line for line in many.stderr.splitlines() if "--threads" in line]
    assert len(lines) == 1, many.stderr
    assert f"--threads {budget * 8}" in lines[0] and f"budget of {budget}" in lines[0]
    assert f"threads free 0/{budget} ({budget * 7} over)" in lines[0], lines[0]
    panel = host_snapshot(load_config(isolated_home / "config.toml"), store(isolated_home))
    assert panel.cores.heavy_threads == budget
    few = swarmdeck_run("--threads", "1", "--", "true")
    assert "--threads" not in few.stderr
