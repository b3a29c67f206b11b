"""Cores and memory of this host: the headroom every admission and reminder starts from."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

# These live in probes/machine.py, so that a runner's start does without this module's
# snapshot classes; mem_total and parse_meminfo are re-exported for this module's readers.
from swarmdeck.ledger import threads_declared as declared_threads
from swarmdeck.probes.machine import local_host_name, read_meminfo
from swarmdeck.probes.machine import mem_total as mem_total
from swarmdeck.probes.machine import parse_meminfo as parse_meminfo
from swarmdeck.probes.procs import cpu_stat_text

if TYPE_CHECKING:
    from swarmdeck.config import Config
    from swarmdeck.state import StateStore

T = TypeVar("T", int, float, str)



@dataclass(frozen=True)
class CpuTimes:
    """Aggregate CPU jiffies from the first line of the kernel's stat file."""

    busy: int
    total: int


@dataclass(frozen=True)
class Cores:
    """How much of the CPU is taken, and how many heavy threads may still start."""

    count: int
    busy_fraction: float | None
    """Share of all cores busy since the previous sample; None before a second sample exists."""
    loadavg: tuple[float, float, float]
    heavy_threads: int
    """Threads this host is willing to run for heavy jobs at once (config, else the core count)."""
    threads_declared: int
    """Threads declared by running ledger jobs on this host."""

    @property
    def busy_cores(self) -> float | None:
        return None if self.busy_fraction is None else self.busy_fraction * self.count

    @property
    def threads_free(self) -> int:
        return self.heavy_threads - self.threads_declared


@dataclass(frozen=True)
class Memory:
    """What the kernel says about memory, and the part of it swarmdeck may hand to jobs."""

    total: int
    available: int
    reserve: int
    """Kept out of the slice for the system and for work that runs outside any cage."""

    @property
    def slice_cap(self) -> int:
        return max(0, self.total - self.reserve)

    @property
    def used(self) -> int:
        return self.total - self.available


@dataclass(frozen=True)
class HostSnapshot:
    """One host at one moment."""

    name: str
    local: bool
    taken_at: float
    cores: Cores
    memory: Memory

    def to_json(self) -> dict[str, object]:
        """The flat object `status --json` and `probe --json` print for a host."""
        load1, load5, load15 = self.cores.loadavg
        return {
            "name": self.name,
            "local": self.local,
            "taken_at": self.taken_at,
            "cores": self.cores.count,
            "busy_fraction": self.cores.busy_fraction,
            "busy_cores": self.cores.busy_cores,
            "load1": load1,
            "load5": load5,
            "load15": load15,
            "heavy_threads": self.cores.heavy_threads,
            "threads_declared": self.cores.threads_declared,
            "threads_free": self.cores.threads_free,
            "mem_total": self.memory.total,
            "mem_available": self.memory.available,
            "mem_used": self.memory.used,
            "reserve": self.memory.reserve,
            "slice_cap": self.memory.slice_cap,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> HostSnapshot:
        """A host read back from its `to_json` object (a peer's `probe --json`); a missing or
        mistyped figure raises ValueError naming it."""
        busy = data.get("busy_fraction")
        if busy is not None:
            busy = _figure(data, "busy_fraction", float)
        return cls(
            name=_figure(data, "name", str),
            local=bool(data.get("local", False)),
            taken_at=_figure(data, "taken_at", float),
            cores=Cores(
                count=_figure(data, "cores", int),
                busy_fraction=busy,
                loadavg=(
                    _figure(data, "load1", float),
                    _figure(data, "load5", float),
                    _figure(data, "load15", float),
                ),
                heavy_threads=_figure(data, "heavy_threads", int),
                threads_declared=_figure(data, "threads_declared", int),
            ),
            memory=Memory(
                total=_figure(data, "mem_total", int),
                available=_figure(data, "mem_available", int),
                reserve=_figure(data, "reserve", int),
            ),
        )


def _figure(data: Mapping[str, Any], key: str, kind: type[T]) -> T:
    """`data[key]` as `kind` (an int passes for a float, a bool for neither)."""
    value = data.get(key)
    allowed = (int, float) if kind is float else (kind,)
    if isinstance(value, bool) or not isinstance(value, allowed):
        raise ValueError(f"host figure {key!r} missing or not {kind.__name__}: {value!r}")
    return kind(value)


def parse_cpu_times(text: str) -> CpuTimes:
    """The aggregate 'cpu' line: idle and iowait are not busy, guest time is already in user."""
    for line in text.splitlines():
        if line.startswith("cpu "):
            values = [int(v) for v in line.split()[1:]]
            user, nice, system, idle, iowait, irq, softirq, steal = (values + [0] * 8)[:8]
            busy = user + nice + system + irq + softirq + steal
            return CpuTimes(busy=busy, total=busy + idle + iowait)
    raise ValueError("no aggregate cpu line in the kernel's stat file")


def read_cpu_times() -> CpuTimes:
    return parse_cpu_times(cpu_stat_text())


def busy_fraction(before: CpuTimes, after: CpuTimes) -> float | None:
    """Share of CPU time spent busy between two samples; None when no time passed."""
    total = after.total - before.total
    if total <= 0:
        return None
    return min(1.0, max(0.0, (after.busy - before.busy) / total))


class CpuSampler:
    """Keeps the previous CPU times so each call reports busy time since the last one."""

    def __init__(self) -> None:
        self._last: CpuTimes | None = None

    def sample(self) -> float | None:
        now = read_cpu_times()
        fraction = None if self._last is None else busy_fraction(self._last, now)
        self._last = now
        return fraction

    def prime(self, settle: float = 0.2) -> None:
        """Take a first reading and wait a little, so a one-shot caller gets a real fraction."""
        self.sample()
        time.sleep(settle)


def read_loadavg() -> tuple[float, float, float]:
    return os.getloadavg()


def threads_declared(store: StateStore | None, host: str) -> int:
    """Threads that running ledger jobs on this host said they would use."""
    if store is None:
        return 0
    with store.read() as conn:
        return declared_threads(conn, host)


def host_snapshot(
    config: Config,
    store: StateStore | None = None,
    sampler: CpuSampler | None = None,
    meminfo: Mapping[str, int] | None = None,
) -> HostSnapshot:
    """This host's cores and memory; busy time is measured since the sampler's last call.
    `meminfo` is the kernel's as the caller has just read it (a snapshot reads it once for
    every part); without it it is read now."""
    name = local_host_name()
    meminfo = read_meminfo() if meminfo is None else meminfo
    total = meminfo["MemTotal"]
    count = os.cpu_count() or 1
    from swarmdeck.config import heavy_thread_budget

    heavy = heavy_thread_budget(config.cores.heavy_threads, count)
    cores = Cores(
        count=count,
        busy_fraction=sampler.sample() if sampler else None,
        loadavg=read_loadavg(),
        heavy_threads=heavy,
        threads_declared=threads_declared(store, name),
    )
    memory = Memory(
        total=total,
        available=meminfo.get("MemAvailable", meminfo.get("MemFree", 0)),
        reserve=min(total, config.memory.reserve.resolve(total)),
    )
    return HostSnapshot(name=name, local=True, taken_at=time.time(), cores=cores, memory=memory)
