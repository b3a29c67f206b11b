"""Process identity from /proc: a pid alone can be reused, (pid, start ticks) cannot."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")


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
    try:
        text = (PROC / str(pid) / "stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    try:
        return parse_stat(text)
    except (ValueError, IndexError):
        return None


def start_ticks(pid: int) -> int | None:
    """Field 22 of /proc/PID/stat (start time in clock ticks since boot), or None if gone."""
    stat = read_stat(pid)
    return stat.start_ticks if stat else None


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
