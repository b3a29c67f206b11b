"""The one reader of /proc: process identity, the process table, a process's command line,
user, links and maps, and the kernel's own files (meminfo, stat, uptime, this process's
mountinfo, cgroup and threads). A pid alone can be reused; (pid, start ticks) cannot.

psutil reads what it reads naturally (a command line, a user, children) and is imported on
first use only: its import is slow and this module is on the path of every run and hook. The
rest is read by hand because psutil lacks it (session ids, uptime, mountinfo, schedstat, a
directory held open), reads far more than asked (memory_maps, threads, children), or costs
more per call on the refresh path (figures: bench/results/figures_from_code.md).

Every read goes through PROC; `use_proc_root` points all of them, psutil too, elsewhere.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

from swarmdeck.probes.kernel_files import read_bytes

if TYPE_CHECKING:
    from collections.abc import Iterator
    from os import PathLike
    from types import ModuleType

PROC = "/proc"
"""The process filesystem every reader here uses."""


def use_proc_root(root: PathLike[str] | str) -> None:
    """Read processes and kernel files under `root` from now on (a test's own tree)."""
    global PROC
    PROC = os.fspath(root).rstrip("/") or "/"
    if "psutil" in sys.modules:
        sys.modules["psutil"].PROCFS_PATH = str(PROC)


def _psutil() -> ModuleType:
    """psutil, imported on first use and reading the same root as everything here."""
    import psutil

    psutil.PROCFS_PATH = str(PROC)
    return psutil


@dataclass(frozen=True)
class ProcessIdentity:
    """A process as swarmdeck remembers it: its pid and field 22 of /proc/PID/stat."""

    pid: int
    start_ticks: int

    def is_alive(self) -> bool:
        """True only when the same process (not a reuse of its pid) still exists."""
        return start_ticks(self.pid) == self.start_ticks


@dataclass(frozen=True)
class StatLine:
    """The fields of /proc/PID/stat swarmdeck uses."""

    pid: int
    comm: str
    state: str
    ppid: int
    pgrp: int
    session: int
    utime: int
    stime: int
    num_threads: int
    start_ticks: int
    rss_pages: int


def parse_stat(text: str) -> StatLine:
    """Parse a /proc/PID/stat line; comm may hold spaces and parentheses: split at the last )."""
    left, _, right = text.rpartition(")")
    pid_text, _, comm = left.partition(" (")
    fields = right.split()
    # fields[0] is field 3 (state); field N is fields[N - 3].
    return StatLine(
        pid=int(pid_text),
        comm=comm,
        state=fields[0],
        ppid=int(fields[1]),
        pgrp=int(fields[2]),
        session=int(fields[3]),
        utime=int(fields[11]),
        stime=int(fields[12]),
        num_threads=int(fields[17]),
        start_ticks=int(fields[19]),
        rss_pages=int(fields[21]),
    )


def read_stat(pid: int) -> StatLine | None:
    """The stat line of a pid, or None when no such process exists (or it vanished while read)."""
    raw = read_bytes(f"{PROC}/{pid}/stat")
    if raw is None:
        return None
    try:
        return parse_stat(raw.decode(errors="replace"))
    except (ValueError, IndexError):
        return None


def start_ticks(pid: int) -> int | None:
    """Field 22 of /proc/PID/stat (start time in clock ticks since boot), or None if gone.

    Asked for every active ledger row inside admission's write transaction, so only the one
    field is picked out: a small share of parsing the whole line as a StatLine.
    """
    raw = read_bytes(f"{PROC}/{pid}/stat")
    if raw is None:
        return None
    try:
        return int(raw[raw.rindex(b")") + 2:].split(None, 20)[19])
    except (ValueError, IndexError):
        return None


def identity(pid: int) -> ProcessIdentity | None:
    """The identity of a running process, or None if there is none with that pid."""
    ticks = start_ticks(pid)
    return ProcessIdentity(pid, ticks) if ticks is not None else None


def own_identity() -> ProcessIdentity:
    """This process's identity."""
    me = identity(os.getpid())
    assert me is not None, "a running process always has /proc/self/stat"
    return me


PER_COMMAND_WRAPPERS = frozenset(
    {
        "sh", "bash", "dash", "zsh", "ksh", "fish",
        "env", "nice", "nohup", "ionice", "taskset", "stdbuf", "setsid", "time", "timeout",
        "sudo", "xargs", "make", "uv", "swarmdeck",
    }
)
"""Processes that live only as long as one command: shells an agent's Bash tool starts for each
call, and wrappers around a command."""


def lasting_ancestor(pid: int) -> ProcessIdentity | None:
    """The nearest ancestor of `pid` that outlives the command it ran.

    A lock or an owner recorded against `bash -c` would go stale the moment the agent's command
    returns, so per-command shells and wrappers are skipped up to the agent itself. A shell that
    leads its own session is a person's terminal, and holds. When every ancestor below init is
    a wrapper (a script run by a service), the outermost of them is the one that lasts longest.
    """
    stat = read_stat(pid)
    outermost: ProcessIdentity | None = None
    while stat is not None and stat.ppid > 1:
        parent = read_stat(stat.ppid)
        if parent is None:
            break
        outermost = ProcessIdentity(parent.pid, parent.start_ticks)
        if parent.comm not in PER_COMMAND_WRAPPERS or parent.session == parent.pid:
            return outermost
        stat = parent
    return outermost


def pids() -> Iterator[int]:
    """Every pid in the process table now."""
    for entry in os.scandir(PROC):
        if entry.name.isdigit():
            yield int(entry.name)


def process_table() -> dict[int, StatLine]:
    """Every process's stat line, read once."""
    table: dict[int, StatLine] = {}
    for pid in pids():
        stat = read_stat(pid)
        if stat is not None:
            table[stat.pid] = stat
    return table


def arguments(pid: int) -> list[str]:
    """The process's command line as its arguments; [] when gone or unreadable."""
    psutil = _psutil()
    try:
        return list(psutil.Process(pid).cmdline())
    except (psutil.Error, OSError):
        return []


def command_line(pid: int) -> str:
    """The process's command line joined by spaces; "" when gone or unreadable."""
    psutil = _psutil()
    try:
        return " ".join(psutil.Process(pid).cmdline())
    except (psutil.Error, OSError):
        return ""


def executable(pid: int) -> str | None:
    """The program a process runs (its /proc/PID/exe link, less the kernel's " (deleted)" for
    a file replaced since it started); None when gone or not ours to read."""
    try:
        target = os.readlink(f"{PROC}/{pid}/exe")
    except OSError:
        return None
    return target.removesuffix(" (deleted)")


def user_of(pid: int) -> str:
    """The name of the user a process runs as (its uid when unnamed); "?" when gone."""
    psutil = _psutil()
    try:
        return str(psutil.Process(pid).username())
    except (psutil.Error, OSError):
        return "?"


def process_links(pid: int) -> list[str]:
    """Where a process's cwd, root, exe and open descriptors point; PermissionError when they
    cannot be read, another OSError when the process is gone."""
    entry = f"{PROC}/{pid}"
    links = [f"{entry}/cwd", f"{entry}/root", f"{entry}/exe"]
    links += [f"{entry}/fd/{name}" for name in os.listdir(f"{entry}/fd")]
    targets = []
    for link in links:
        try:
            targets.append(os.readlink(link))
        except PermissionError:
            raise
        except OSError:
            continue  # the fd closed or the process ended meanwhile
    return targets


def environment(pid: int) -> bytes:
    """A process's environment as the kernel keeps it (NUL-separated NAME=VALUE); b"" when gone
    or not ours to read."""
    try:
        with open(f"{PROC}/{pid}/environ", "rb") as file:
            return file.read()
    except OSError:
        return b""


def mapped_files(pid: int) -> list[str]:
    """The files a process has mapped (the path column of its maps)."""
    paths = set()
    with open(f"{PROC}/{pid}/maps", errors="replace") as file:
        text = file.read()
    for line in text.splitlines():
        parts = line.split(maxsplit=5)
        if len(parts) == 6 and parts[5].startswith("/"):
            paths.add(parts[5])
    return sorted(paths)


def parse_meminfo(text: str) -> dict[str, int]:
    """meminfo as bytes per field."""
    fields: dict[str, int] = {}
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        parts = rest.split()
        if not parts:
            continue
        value = int(parts[0])
        fields[key] = value * 1024 if len(parts) > 1 and parts[1] == "kB" else value
    return fields


def read_meminfo() -> dict[str, int]:
    """The kernel's meminfo now, as bytes per field."""
    return parse_meminfo(proc_text("meminfo"))


def cpu_stat_text() -> str:
    """The kernel's stat file (aggregate and per-CPU jiffies)."""
    return proc_text("stat")


def ticks_since_boot() -> int | None:
    """Clock ticks since boot (the unit of start ticks); None when uptime cannot be read."""
    try:
        uptime = float(proc_text("uptime").split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return int(uptime * os.sysconf("SC_CLK_TCK"))


def proc_text(name: str) -> str:
    """A kernel file at the top of PROC (meminfo, stat, uptime), read whole; the one reader of
    each of them."""
    with open(f"{PROC}/{name}") as file:
        return file.read()


def own_file(name: str) -> str:
    """A file of this process's own entry (mountinfo, cgroup, oom_score_adj); in a child
    between fork and exec it names the child's."""
    return f"{PROC}/self/{name}"


def own_thread_count() -> int:
    """Threads of the calling process; safe between fork and exec."""
    return len(os.listdir(f"{PROC}/self/task"))


def thread_cpu(tid: int) -> tuple[int, int, bool] | None:
    """(start ticks, CPU nanoseconds, whether at ns resolution) of one thread; None if gone.

    Any thread is found as PROC/TID/task/TID, so a thread id from a cgroup's list is enough.
    The CPU time is schedstat's first field where the kernel has it, else stat's utime+stime
    ticks (10 ms resolution, too coarse for short windows but still right on average).
    """
    task = f"{PROC}/{tid}/task/{tid}/"
    stat = read_bytes(task + "stat")
    if stat is None:
        return None
    # Fields after the last ")" (comm may hold one): [11] utime, [12] stime, [19] start ticks.
    fields = stat[stat.rfind(b")") + 2 :].split()
    try:
        start = int(fields[19])
        schedstat = read_bytes(task + "schedstat")
        if schedstat is not None and schedstat.strip():
            return start, int(schedstat.split()[0]), True
        ticks = int(fields[11]) + int(fields[12])
    except (ValueError, IndexError):
        return None
    return start, ticks * 1_000_000_000 // os.sysconf("SC_CLK_TCK"), False


def thread_ids(pid: int) -> list[int]:
    """The threads of a process; empty once it is gone."""
    try:
        return [int(name) for name in os.listdir(f"{PROC}/{pid}/task")]
    except OSError:
        return []


def children_of(pid: int) -> list[int] | None:
    """The children of every thread of `pid` (each thread lists the ones it forked); None when
    this kernel keeps no `children` files (CONFIG_PROC_CHILDREN off)."""
    found: list[int] = []
    for tid in thread_ids(pid):
        task = f"{PROC}/{pid}/task/{tid}"
        listed = read_bytes(task + "/children")
        if listed is None:
            if os.path.isdir(task):
                return None
            continue  # the thread ended meanwhile
        found += [int(word) for word in listed.split()]
    return found


def fork_count() -> int | None:
    """Processes forked on this host since boot (the `processes` line of stat)."""
    text = read_bytes(f"{PROC}/stat")
    if text is None:
        return None
    at = text.find(b"\nprocesses ")
    if at < 0:
        return None
    words = text[at + 1 :].split(maxsplit=2)
    return int(words[1]) if len(words) > 1 and words[1].isdigit() else None
