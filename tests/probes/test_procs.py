"""Process identity and the caller a lock is held by."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from swarmdeck.probes.procs import identity, parse_stat, start_ticks

REPORT = (
    "import os; from swarmdeck.probes.procs import lasting_ancestor; "
    "a = lasting_ancestor(os.getpid()); print(a.pid if a else 0)"
)


def test_comm_with_spaces_and_parentheses_is_parsed_from_the_last_parenthesis() -> None:
    fields = " ".join(
        ["S", "1", "2", "3"] + ["0"] * 7 + ["5", "6"] + ["0"] * 4 + ["3", "0", "987", "0", "42"]
    )
    stat = parse_stat(f"77 (a (b) c) {fields}")
    assert (stat.pid, stat.comm, stat.ppid, stat.start_ticks, stat.rss_pages) == (
        77,
        "a (b) c",
        1,
        987,
        42,
    )


def test_identity_is_pid_and_start_ticks_and_fails_on_another_start() -> None:
    me = identity(os.getpid())
    assert me is not None and me.start_ticks == start_ticks(os.getpid())
    assert me.is_alive()
    assert not type(me)(me.pid, me.start_ticks + 1).is_alive()


def test_per_command_shells_are_skipped_up_to_the_caller_that_outlives_them() -> None:
    inner = f"{sys.executable} -c '{REPORT}'"
    out = subprocess.run(
        ["sh", "-c", f'bash -c "{inner}; true"; true'], capture_output=True, text=True, check=True
    )
    assert int(out.stdout) == os.getpid()


def test_a_shell_leading_its_own_session_is_a_terminal_and_holds() -> None:
    script = f"{sys.executable} -c '{REPORT}'; echo $$"
    out = subprocess.run(["setsid", "sh", "-c", script], capture_output=True, text=True, check=True)
    reported, shell = out.stdout.split()
    assert reported == shell


def test_when_every_ancestor_is_a_wrapper_the_outermost_holds(tmp_path: Path) -> None:
    """A script left to init (its launcher gone) still gets a holder: its outermost shell."""
    out = tmp_path / "out"
    inner = f"sleep 0.3; echo \\$\\$ > {out}.shell; {sys.executable} -c '{REPORT}' > {out}.tmp"
    subprocess.run(["sh", "-c", f'sh -c "{inner}; mv {out}.tmp {out}" &'], check=True)
    deadline = time.monotonic() + 30
    while not out.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert out.read_text().split() == Path(f"{out}.shell").read_text().split()
