"""Process identity, the caller a lock is held by, and the one /proc root every read follows."""

from __future__ import annotations

import os
import pwd
import subprocess
import sys
import time
from pathlib import Path

import pytest

from swarmdeck.probes import procs
from swarmdeck.probes.procs import identity, parse_stat, start_ticks
from waiting import wait_for

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


def test_start_ticks_is_field_22_whatever_the_command_name_holds(tmp_path: Path) -> None:
    fields = " ".join(["S", "1"] + ["0"] * 17 + ["31337", "0", "42"])
    root = tmp_path / "proc"
    for pid, comm in ((10, b"a) (b) 9 9"), (11, b"\xff\xfe) x"), (12, b"")):
        (root / str(pid)).mkdir(parents=True)
        (root / str(pid) / "stat").write_bytes(b"%d (%s) %s\n" % (pid, comm, fields.encode()))
    (root / "13").mkdir()
    (root / "13" / "stat").write_bytes(b"13 (cut")
    procs.use_proc_root(root)
    try:
        assert [procs.start_ticks(pid) for pid in (10, 11, 12, 13, 14)] == [
            31337, 31337, 31337, None, None
        ]
        assert [procs.read_stat(pid).start_ticks for pid in (10, 11, 12)] == [31337] * 3
        assert procs.read_stat(11).comm == "\ufffd\ufffd) x"
        assert procs.read_stat(13) is None
    finally:
        procs.use_proc_root("/proc")


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


def _fake_proc(root: Path, pid: int, ticks: int, cmdline: list[str]) -> None:
    """A process tree of one process under `root`, as the kernel would show it."""
    entry = root / str(pid)
    (entry / "fd").mkdir(parents=True)
    fields = ["S", "1", str(pid), str(pid)] + ["0"] * 7 + ["5", "6"] + ["0"] * 4
    fields += ["1", "0", str(ticks), "0", "42"] + ["0"] * 28  # 50 fields after comm, as now
    (entry / "stat").write_text(f"{pid} (fake job) {' '.join(fields)}\n")
    (entry / "cmdline").write_bytes(b"\0".join(part.encode() for part in cmdline) + b"\0")
    (entry / "maps").write_text("00400000-00401000 r-xp 00000000 08:01 1 /opt/fake/lib.so\n")
    (root / "meminfo").write_text("MemTotal:       2048 kB\nMemAvailable:   1024 kB\n")
    (root / "uptime").write_text("100.50 200.00\n")
    (root / "stat").write_text("cpu  1 2 3 4 5 6 7 8 0 0\nbtime 1700000000\n")


@pytest.fixture
def fake_root(tmp_path: Path):
    root = tmp_path / "proc"
    _fake_proc(root, 4242, 777, ["python", "train.py", "--epochs", "3"])
    procs.use_proc_root(root)
    try:
        yield root
    finally:
        procs.use_proc_root("/proc")


def test_every_read_follows_the_one_proc_root(fake_root: Path) -> None:
    assert procs.start_ticks(4242) == 777
    assert procs.read_stat(4242).comm == "fake job"
    assert list(procs.pids()) == [4242]
    assert procs.process_table()[4242].ppid == 1
    assert procs.read_meminfo() == {"MemTotal": 2048 * 1024, "MemAvailable": 1024 * 1024}
    assert procs.ticks_since_boot() == int(100.5 * os.sysconf("SC_CLK_TCK"))
    assert procs.mapped_files(4242) == ["/opt/fake/lib.so"]
    assert procs.own_file("cgroup") == str(fake_root / "self" / "cgroup")


def test_the_command_line_is_read_by_psutil_under_the_same_root(fake_root: Path) -> None:
    assert procs.command_line(4242) == "python train.py --epochs 3"
    assert procs.command_line(4243) == ""


def test_a_real_process_has_its_command_line_and_user() -> None:
    child = subprocess.Popen(["sleep", "30"])
    try:
        wait_for(lambda: procs.command_line(child.pid) == "sleep 30", seen=lambda: child.pid)
        assert procs.user_of(child.pid) == pwd.getpwuid(os.getuid()).pw_name
    finally:
        child.kill()
        child.wait()
    assert procs.command_line(child.pid) == "" and procs.user_of(child.pid) == "?"
