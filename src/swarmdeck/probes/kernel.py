"""What the kernel itself logged about memory: OOM kills and NVIDIA out-of-memory errors.

A job that died with 137 may have hit its own cap, lost to a full machine or been shot for
another cgroup's sake; only the kernel's log says which. The log is read from /dev/kmsg (each
record carries microseconds since boot) and, where that cannot be opened, from `dmesg`.
Reading it never changes anything; an unreadable log is a normal "not read" state.
"""

from __future__ import annotations

import errno
import os
import re
import subprocess
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

KMSG = Path("/dev/kmsg")
DMESG = ("dmesg",)
"""The command that prints the kernel log when /dev/kmsg cannot be opened."""
# One kmsg record never exceeds this (the kernel's own limit is about 8 KiB of text plus the
# prefix); a read with a smaller buffer fails with EINVAL.
_KMSG_READ_SIZE = 16384

MACHINE = "machine"
CGROUP = "cgroup"
CPUSET = "cpuset"
MEMPOLICY = "mempolicy"
UNKNOWN = "unknown"

_SCOPES = {
    "CONSTRAINT_NONE": MACHINE,
    "CONSTRAINT_MEMCG": CGROUP,
    "CONSTRAINT_CPUSET": CPUSET,
    "CONSTRAINT_MEMORY_POLICY": MEMPOLICY,
}

_KMSG_RECORD = re.compile(r"^(?P<prefix>\d+),(?P<seq>\d+),(?P<usec>\d+),[^;]*;(?P<text>.*)$", re.S)
# "[  217.171604] text"; "<6>" first with --raw; "[ T1234]" after it with CONFIG_PRINTK_CALLER.
_DMESG_LINE = re.compile(
    r"^(?:<\d+>)?\[\s*(?P<secs>\d+\.\d+)\]\s?(?:\[\s*[TC]\d+\]\s?)?(?P<text>.*)$"
)
_OOM_KILL = re.compile(r"^oom-kill:(?P<fields>\S+)\s*$")
_OUT_OF_MEMORY = (
    r"(?P<kind>Memory cgroup out of memory|Out of memory(?: \(oom_kill_allocating_task\))?)"
)
# Current kernels: "Out of memory: Killed process 4242 (python3) total-vm:…, UID:1000 …".
# Older ones: "Out of memory: Kill process 4242 (python3) score 900 or sacrifice child", then
# a bare "Killed process 4242 (python3) total-vm:…" (3.10: "(python3), UID 1000, total-vm:…").
_KILLED = re.compile(
    rf"^(?:{_OUT_OF_MEMORY}: )?Killed process (?P<pid>\d+) \((?P<comm>.*)\)(?P<rest>.*)$"
)
_KILL_CHOSEN = re.compile(rf"^{_OUT_OF_MEMORY}: Kill process (?P<pid>\d+) \(")
# Kernels older than the oom-kill line name a cgroup OOM's cgroups only here, before the kill.
_TASK_IN = re.compile(r"^Task in (?P<task>\S+) killed as a result of limit of (?P<oom>\S+)$")
_RSS = re.compile(r"anon-rss:(?P<anon>\d+)kB")
_UID = re.compile(r"UID[: ](?P<uid>\d+)")


@dataclass(frozen=True)
class LogLine:
    """One kernel message: its sequence number (None from `dmesg`), time since boot, text."""

    seq: int | None
    since_boot: float
    text: str


@dataclass(frozen=True)
class OomKill:
    """One process the OOM killer shot, and whether a cgroup cap or the whole machine ran out.

    `scope` is "machine" (CONSTRAINT_NONE: the machine as a whole had no memory left),
    "cgroup" (CONSTRAINT_MEMCG: a memory cgroup hit its cap; `oom_memcg` is the one that did,
    `task_memcg` the victim's own), "cpuset", "mempolicy" or "unknown".
    """

    at: float
    since_boot: float
    pid: int
    process: str
    uid: int | None
    scope: str
    constraint: str
    oom_memcg: str
    task_memcg: str
    anon_rss: int | None

    @property
    def inside_a_cap(self) -> bool:
        """True when a memory cgroup's cap, not the machine, ran out."""
        return self.scope == CGROUP


@dataclass(frozen=True)
class GpuOutOfMemory:
    """An NVIDIA driver message saying NV_ERR_NO_MEMORY: a GPU allocation failed."""

    at: float
    since_boot: float
    text: str


@dataclass
class KernelLog:
    """What the kernel log held for a window; `state` is "read" or "not read" (see `reason`)."""

    state: str
    source: str
    reason: str = ""
    oom_kills: list[OomKill] = field(default_factory=list)
    gpu_out_of_memory: list[GpuOutOfMemory] = field(default_factory=list)
    skipped: int = 0
    last_seq: int | None = None

    @property
    def read(self) -> bool:
        return self.state == "read"


def scope_of(constraint: str) -> str:
    """Where the memory ran out, from the kernel's oom constraint name."""
    return _SCOPES.get(constraint, UNKNOWN)


def parse_kmsg_record(record: str) -> LogLine | None:
    """One /dev/kmsg record ("prefix,seq,usec,flags;text" plus continuation lines), or None.

    Continuation lines (starting with a space: the record's KEY=VALUE dictionary) are dropped.
    """
    first, _, _ = record.partition("\n")
    match = _KMSG_RECORD.match(first)
    if not match:
        return None
    return LogLine(int(match["seq"]), int(match["usec"]) / 1_000_000, match["text"])


def parse_dmesg_line(line: str) -> LogLine | None:
    """One line of `dmesg` output ("[  217.171604] text", optionally "<6>" first), or None."""
    match = _DMESG_LINE.match(line)
    if not match:
        return None
    return LogLine(None, float(match["secs"]), match["text"])


def _fields(text: str) -> dict[str, str]:
    pairs: dict[str, str] = {}
    for part in text.split(","):
        key, sep, value = part.partition("=")
        if sep:
            pairs[key] = value
    return pairs


@dataclass
class _Collector:
    """Folds log lines into events. An OOM kill spans several lines: the oom-kill line (kept
    until its "Killed process" line), and on older kernels a "Task in … killed as a result
    of limit of …" line and an "Out of memory: Kill process" line announcing the victim."""

    boot_epoch: float
    log: KernelLog
    pending: dict[int, tuple[LogLine, dict[str, str]]] = field(default_factory=dict)
    announced: dict[int, str] = field(default_factory=dict)
    cgroups: dict[str, str] = field(default_factory=dict)

    def feed(self, line: LogLine) -> None:
        text = line.text
        if text.startswith("oom-kill:"):
            self._oom_kill_line(line)
        elif "Killed process " in text:
            self._killed_line(line)
        elif (chosen := _KILL_CHOSEN.match(text)) is not None:
            self.announced[int(chosen["pid"])] = chosen["kind"]
        elif (task_in := _TASK_IN.match(text)) is not None:
            self.cgroups = {"task_memcg": task_in["task"], "oom_memcg": task_in["oom"]}
        elif "NV_ERR_NO_MEMORY" in text:
            self.log.gpu_out_of_memory.append(
                GpuOutOfMemory(self.boot_epoch + line.since_boot, line.since_boot, text)
            )

    def finish(self) -> None:
        """An oom-kill line whose "Killed process" line fell outside the window still counts."""
        for line, pairs in self.pending.values():
            self._add(line, int(pairs["pid"]), pairs.get("task", ""), pairs, pairs["constraint"])
        self.pending.clear()

    def _oom_kill_line(self, line: LogLine) -> None:
        match = _OOM_KILL.match(line.text)
        pairs = _fields(match["fields"]) if match else {}
        if not pairs.get("pid", "").isdigit() or "constraint" not in pairs:
            self.log.skipped += 1
            return
        self.pending[int(pairs["pid"])] = (line, pairs)

    def _killed_line(self, line: LogLine) -> None:
        match = _KILLED.match(line.text)
        if not match:
            self.log.skipped += 1
            return
        pid = int(match["pid"])
        pending = self.pending.pop(pid, None)
        kind = match["kind"] or self.announced.pop(pid, "")
        if pending:
            pairs = pending[1]
            constraint = pairs["constraint"]
        else:
            pairs = self.cgroups if kind.startswith("Memory cgroup") else {}
            constraint = _constraint_of(kind)
        self.cgroups = {}
        rss = _RSS.search(match["rest"])
        self._add(line, pid, match["comm"], pairs, constraint, rss=rss, rest=match["rest"])

    def _add(
        self,
        line: LogLine,
        pid: int,
        process: str,
        pairs: dict[str, str],
        constraint: str,
        *,
        rss: re.Match[str] | None = None,
        rest: str = "",
    ) -> None:
        uid_text = pairs.get("uid") or _uid_from(rest)
        self.log.oom_kills.append(
            OomKill(
                at=self.boot_epoch + line.since_boot,
                since_boot=line.since_boot,
                pid=pid,
                process=process,
                uid=int(uid_text) if uid_text and uid_text.isdigit() else None,
                scope=scope_of(constraint),
                constraint=constraint,
                oom_memcg=pairs.get("oom_memcg", ""),
                task_memcg=pairs.get("task_memcg", ""),
                anon_rss=int(rss["anon"]) * 1024 if rss else None,
            )
        )


def _constraint_of(kind: str) -> str:
    """The constraint a kill line's wording implies when no oom-kill line names it: a memory
    cgroup's, the whole machine's, or (a bare "Killed process" line alone) unknown."""
    if kind.startswith("Memory cgroup"):
        return "CONSTRAINT_MEMCG"
    if kind:
        return "CONSTRAINT_NONE"
    return ""


def _uid_from(rest: str) -> str | None:
    match = _UID.search(rest)
    return match["uid"] if match else None


def boot_epoch() -> float:
    """Wall-clock time of boot on the clock kernel log stamps use (CLOCK_MONOTONIC)."""
    return time.time() - time.monotonic()


def events_from(
    lines: Iterable[LogLine | None],
    *,
    since: float | None = None,
    until: float | None = None,
    after_seq: int | None = None,
    boot: float | None = None,
    source: str = "",
) -> KernelLog:
    """OOM kills and GPU out-of-memory lines among `lines`, for a window of wall-clock time.

    A None entry is a line that could not be parsed at all: it is skipped and counted.
    `after_seq` keeps only kmsg records newer than a sequence number seen before.
    """
    log = KernelLog(state="read", source=source)
    collector = _Collector(boot if boot is not None else boot_epoch(), log)
    for line in lines:
        if line is None:
            log.skipped += 1
            continue
        if line.seq is not None:
            log.last_seq = line.seq if log.last_seq is None else max(log.last_seq, line.seq)
            if after_seq is not None and line.seq <= after_seq:
                continue
        at = collector.boot_epoch + line.since_boot
        if (since is not None and at < since) or (until is not None and at > until):
            continue
        collector.feed(line)
    collector.finish()
    return log


def _split_records(chunk: str) -> Iterator[str]:
    """The records in one read: /dev/kmsg gives one per read, a plain file (a test's own log)
    gives many; a record is a line and the continuation lines (starting with a space) after it."""
    record: list[str] = []
    for line in chunk.splitlines():
        if record and not line.startswith(" "):
            yield "\n".join(record)
            record = []
        record.append(line)
    if record:
        yield "\n".join(record)


def _kmsg_records(path: Path) -> Iterator[str]:
    """Every record `path` (/dev/kmsg, or a file of records) holds now, without waiting for
    new ones."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        while True:
            try:
                chunk = os.read(fd, _KMSG_READ_SIZE)
            except BlockingIOError:
                return
            except OSError as error:
                # EPIPE: the ring buffer overwrote records while we read; the next read
                # continues from the oldest one still there, so reading on is safe.
                if error.errno == errno.EPIPE:
                    continue
                raise
            if not chunk:
                return
            yield from _split_records(chunk.decode("utf-8", errors="replace"))
    finally:
        os.close(fd)


def _dmesg_lines(command: Sequence[str]) -> list[str]:
    result = subprocess.run(
        list(command),
        capture_output=True,
        text=True,
        errors="replace",
        env={**os.environ, "LC_ALL": "C"},
        timeout=10,
        check=False,
    )
    if result.returncode != 0:
        raise OSError(result.stderr.strip() or f"dmesg exited {result.returncode}")
    return result.stdout.splitlines()


def kernel_log(
    since: float | None = None,
    until: float | None = None,
    *,
    after_seq: int | None = None,
    kmsg: Path = KMSG,
    use_dmesg: bool = True,
    dmesg: Sequence[str] = DMESG,
) -> KernelLog:
    """The OOM kills and NV_ERR_NO_MEMORY lines the kernel logged between `since` and `until`.

    Times are epoch seconds. `kmsg` first; the `dmesg` command when kmsg cannot be opened; when
    neither can be read the answer is a KernelLog in state "not read" with the reason, never an
    error. Tests hand in a log of their own for both, never the machine's.
    """
    try:
        records = list(_kmsg_records(kmsg))
    except OSError as kmsg_error:
        if not use_dmesg:
            return KernelLog(state="not read", source=str(kmsg), reason=str(kmsg_error))
        try:
            lines = _dmesg_lines(dmesg)
        except (OSError, subprocess.SubprocessError) as dmesg_error:
            return KernelLog(
                state="not read",
                source="dmesg",
                reason=f"{kmsg}: {kmsg_error}; dmesg: {dmesg_error}",
            )
        return events_from(
            (parse_dmesg_line(line) for line in lines if line.strip()),
            since=since,
            until=until,
            source="dmesg",
        )
    return events_from(
        (parse_kmsg_record(record) for record in records),
        since=since,
        until=until,
        after_seq=after_seq,
        source=str(kmsg),
    )


def last_seq(kmsg: Path = KMSG) -> int | None:
    """The newest kmsg sequence number now, to read only what comes after it later."""
    return kernel_log(kmsg=kmsg, use_dmesg=False).last_seq
