"""The systemd-scope backend for real: checks run inside a guest whose init is systemd.

Run as root from a system service of the guest (tests_v2/systemd/inside.sh) with the system's
python on the source tree, stdlib only. Root's jobs go to transient scopes under a slice unit the
config names; the user `agent` (uid 1000, whose user@1000.service systemd starts at boot) runs
`swarmdeck run` inside its own user manager, with no slice configured, and gets `systemd-run
--user --scope` cages in its delegated subtree. Each check prints PASS or FAIL and its name on
the console; the last line counts them.
"""

from __future__ import annotations

import os
import pwd
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import traceback
from collections.abc import Callable
from pathlib import Path

MIB = 1 << 20
SLICE_CAP = 100 * MIB
SRC = str(Path(__file__).resolve().parents[2] / "src")
AS_COMMAND = (
    "import sys; from swarmdeck.cli import main; sys.argv[0] = 'swarmdeck'; sys.exit(main())"
)
HOG = "import sys; n = int(sys.argv[1]) << 20; b = bytearray(n); b[::4096] = b'1' * (n // 4096)"
OWN_CAP = (
    'c=$(cut -d: -f3 /proc/self/cgroup); echo "$c"; cat "/sys/fs/cgroup$c/memory.max"'
    ' "/sys/fs/cgroup$c/memory.swap.max"'
)
OVER_CAP_RUNS = 4
"""Runs of a job over its cap per check: systemd removes a scope the moment it is empty, so the
runner's reading of why the job ended is a race it must win every time, not once."""
CHECKS: list[Callable[[], None]] = []


def check(function: Callable[[], None]) -> Callable[[], None]:
    CHECKS.append(function)
    return function


def mem_total() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no MemTotal")


def write_config(path: Path, slice_setting: str | None) -> None:
    lines = ["[memory]"]
    if slice_setting is not None:
        lines.append(f'slice = "{slice_setting}"')
    lines += [
        f'reserve = "{mem_total() - SLICE_CAP}B"', 'margin = "1M"', 'default_prediction = "16M"',
        "sample_interval = 0.05", "admission_wait = 0.0",
    ]
    path.write_text("\n".join(lines) + "\n")


def home_env(home: Path) -> dict[str, str]:
    return {
        "HOME": str(home), "PYTHONPATH": SRC, "PYTHONDONTWRITEBYTECODE": "1",
        "SWARMDECK_STATE_DIR": str(home / "state"), "SWARMDECK_CONFIG": str(home / "config.toml"),
        "SWARMDECK_RUN_DIR": str(home / "run"), "XDG_CONFIG_HOME": str(home / "xdg"),
        "XDG_STATE_HOME": str(home / "xdg"), "CLAUDE_CONFIG_DIR": str(home / "claude"),
    }


def as_root(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, **home_env(home))
    return subprocess.run(
        [sys.executable, "-c", AS_COMMAND, *args], capture_output=True, text=True, timeout=300,
        env=env, cwd=home,
    )


def as_agent(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`swarmdeck ARGS` as agent, started as a transient service of agent's user manager."""
    setenv = [f"--setenv={key}={value}" for key, value in home_env(home).items()]
    return subprocess.run(
        ["systemd-run", "--user", "--machine=agent@", "--wait", "--pipe", "--quiet",
         f"--working-directory={home}", *setenv, "--",
         sys.executable, "-c", AS_COMMAND, *args],
        capture_output=True, text=True, timeout=300,
    )


def ledger(home: Path) -> list[sqlite3.Row]:
    conn = sqlite3.connect(home / "state" / "state.db")
    conn.row_factory = sqlite3.Row
    try:
        return conn.execute("SELECT * FROM jobs ORDER BY id").fetchall()
    finally:
        conn.close()


def expect(result: subprocess.CompletedProcess[str], code: int) -> None:
    assert result.returncode == code, (
        f"exit {result.returncode}, wanted {code}: {result.stdout!r} {result.stderr!r}"
    )


def property_of(unit: str, name: str, user: bool = False) -> str:
    argv = ["systemctl", *(["--user", "--machine=agent@"] if user else []), "show", "-P", name]
    return subprocess.run([*argv, unit], capture_output=True, text=True, check=True).stdout.strip()


@check
def root_jobs_run_in_transient_scopes_under_the_configured_slice_unit() -> None:
    home = Path(tempfile.mkdtemp(prefix="scope-root-"))
    write_config(home / "config.toml", "swarmdeck-test.slice")
    result = as_root(home, "run", "--cap", "30M", "--", "sh", "-c", OWN_CAP)
    expect(result, 0)
    cgroup, cap, swap = result.stdout.split()
    assert cgroup.startswith("/swarmdeck.slice/swarmdeck-test.slice/swarmdeck-job-1-"), cgroup
    assert cgroup.endswith(".scope") and (cap, swap) == (str(30 * MIB), "0"), result.stdout
    assert property_of("swarmdeck-test.slice", "MemoryMax") == str(SLICE_CAP)
    (row,) = ledger(home)
    assert row["cgroup"] == "/sys/fs/cgroup" + cgroup, row["cgroup"]
    assert not Path(row["cgroup"]).exists(), "the collected scope is gone"
    shutil.rmtree(home)


@check
def a_root_job_over_its_scopes_cap_exits_250_and_one_that_never_fits_252() -> None:
    home = Path(tempfile.mkdtemp(prefix="scope-root-"))
    write_config(home / "config.toml", "swarmdeck-test.slice")
    for _ in range(OVER_CAP_RUNS):
        over = as_root(home, "run", "--cap", "30M", "--", sys.executable, "-c", HOG, "40")
        expect(over, 250)
        assert "hit its own memory cap of 30M" in over.stderr, over.stderr
    expect(as_root(home, "run", "--cap", "1G", "--", "true"), 252)
    expect(as_root(home, "run", "--", "sh", "-c", "exit 7"), 7)
    assert [row["exit_code"] for row in ledger(home)] == [250] * OVER_CAP_RUNS + [252, 7]
    shutil.rmtree(home)


def agent_home() -> Path:
    agent = pwd.getpwnam("agent")
    home = Path(tempfile.mkdtemp(prefix="scope-agent-", dir=agent.pw_dir))
    write_config(home / "config.toml", None)
    for path in (home, home / "config.toml"):
        os.chown(path, agent.pw_uid, agent.pw_gid)
    return home


@check
def a_user_runs_caged_jobs_as_scopes_of_its_own_user_manager() -> None:
    home = agent_home()
    result = as_agent(home, "run", "--cap", "30M", "--", "sh", "-c", OWN_CAP)
    expect(result, 0)
    cgroup, cap, swap = result.stdout.split()
    assert "/user@1000.service/" in cgroup and cgroup.endswith(".scope"), cgroup
    assert "/swarmdeck.slice/swarmdeck-job-1-" in cgroup, cgroup
    assert (cap, swap) == (str(30 * MIB), "0"), result.stdout
    assert property_of("swarmdeck.slice", "MemoryMax", user=True) == str(SLICE_CAP)


@check
def a_user_job_over_its_cap_exits_250() -> None:
    home = agent_home()
    for _ in range(OVER_CAP_RUNS):
        over = as_agent(home, "run", "--cap", "30M", "--", sys.executable, "-c", HOG, "40")
        expect(over, 250)
        assert "hit its own memory cap of 30M" in over.stderr, over.stderr


def main() -> int:
    passed = failed = 0
    for function in CHECKS:
        try:
            function()
        except Exception:  # every failure is reported, then the next check runs
            failed += 1
            detail = traceback.format_exc().strip().splitlines()
            print(f"FAIL {function.__name__}", *("    " + line for line in detail), sep="\n")
        else:
            passed += 1
            print(f"PASS {function.__name__}")
        sys.stdout.flush()
    print(f"systemd guest: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
