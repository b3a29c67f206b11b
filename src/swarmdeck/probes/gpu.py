"""What is on each GPU card: memory, load, temperature, compute processes and quiesce holders.

A GPU job fails late and expensively when another process holds the card's memory, so the
control room shows every compute process, marks the ones the config expects (the allowlist)
and names the `gpu-run` wrappers that hold the cards quiesced. Values NVML cannot give show as
"n/a" or "not read: ERROR"; a machine without a GPU is the normal state "no GPU".
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from swarmdeck.paths import state_dir
from swarmdeck.probes import procs
from swarmdeck.probes.nvml import NA, READY, Missing, Nvml, shared_nvml

Reading = int | str
"""A number, or the text saying why there is none ("n/a", "not read: ERROR")."""

_NVML_TEMPERATURE_GPU = 0
# NVML_VALUE_NOT_AVAILABLE as an unsigned long long: no figure for this field.
_NOT_AVAILABLE = 2**64 - 1


@dataclass(frozen=True)
class QuiesceHolder:
    """A `gpu-run` wrapper registered as holding the cards quiesced; stale ones are not alive."""

    pid: int
    start_ticks: int
    command: str
    since: float
    alive: bool
    reason: str = ""

    def to_text(self) -> str:
        return json.dumps(
            {
                "pid": self.pid,
                "start_ticks": self.start_ticks,
                "command": self.command,
                "since": self.since,
            }
        )


@dataclass(frozen=True)
class GpuProcess:
    """A compute process on a card; `holder` is the pid of the gpu-run it runs under, if any."""

    pid: int
    used_memory: Reading
    name: str
    user: str
    command: str
    allowlisted: bool
    holder: int | None = None

    @property
    def foreign(self) -> bool:
        """Neither expected by the config nor started under a gpu-run wrapper."""
        return not self.allowlisted and self.holder is None


@dataclass(frozen=True)
class GpuCard:
    """One card as NVML reported it in one query."""

    index: int
    name: str
    uuid: str
    memory_total: Reading
    memory_used: Reading
    memory_free: Reading
    utilization: Reading
    memory_utilization: Reading
    temperature: Reading
    processes: Reading | list[GpuProcess] = field(default_factory=list)
    problem: str = ""

    @property
    def process_list(self) -> list[GpuProcess]:
        return self.processes if isinstance(self.processes, list) else []


@dataclass
class GpuSnapshot:
    """Every card of this host, or why there are none (`state`: "ok", "no GPU", "not read")."""

    state: str
    reason: str = ""
    driver_version: str = ""
    cards: list[GpuCard] = field(default_factory=list)
    holders: list[QuiesceHolder] = field(default_factory=list)
    taken_at: float = 0.0

    @property
    def live_holders(self) -> list[QuiesceHolder]:
        return [h for h in self.holders if h.alive]

    def summary(self) -> str:
        """One short line for the Hosts panel: "no GPU", or cards and memory in use."""
        if self.state != READY:
            return f"{self.state}: {self.reason}" if self.reason else self.state
        used = [c.memory_used for c in self.cards if isinstance(c.memory_used, int)]
        total = [c.memory_total for c in self.cards if isinstance(c.memory_total, int)]
        gib = 1024**3
        memory = f", {sum(used) / gib:.1f}/{sum(total) / gib:.0f} GiB used" if total else ""
        return f"{len(self.cards)} GPU{'s' if len(self.cards) != 1 else ''}{memory}"

    def as_rows(self) -> list[GpuRow]:
        """The snapshot's `gpus` list: one row per card, or one row saying why there are none."""
        if not self.cards:
            return [GpuRow(self, None)]
        return [GpuRow(self, card) for card in self.cards]


@dataclass(frozen=True)
class GpuRow:
    """One entry of the snapshot's `gpus` list: a card (None: there is none) and its host's
    GPU state, so each flat row carries the driver, the state and the quiesce holders."""

    snapshot: GpuSnapshot
    card: GpuCard | None

    def to_json(self) -> dict[str, Any]:
        holders = [
            {"pid": h.pid, "command": h.command, "since": h.since, "alive": h.alive}
            for h in self.snapshot.holders
        ]
        card = self.card
        if card is None:
            return {
                "index": None,
                "state": self.snapshot.state,
                "reason": self.snapshot.reason,
                "quiesce_holders": holders,
            }
        processes: Reading | list[dict[str, Any]] = (
            [
                {
                    "pid": p.pid,
                    "used_memory": p.used_memory,
                    "name": p.name,
                    "user": p.user,
                    "command": p.command,
                    "allowlisted": p.allowlisted,
                    "holder": p.holder,
                }
                for p in card.processes
            ]
            if isinstance(card.processes, list)
            else card.processes
        )
        return {
            "index": card.index,
            "state": "not read" if card.problem else self.snapshot.state,
            "reason": card.problem,
            "name": card.name,
            "uuid": card.uuid,
            "driver_version": self.snapshot.driver_version,
            "memory_total": card.memory_total,
            "memory_used": card.memory_used,
            "memory_free": card.memory_free,
            "utilization": card.utilization,
            "memory_utilization": card.memory_utilization,
            "temperature": card.temperature,
            "processes": processes,
            "quiesce_holders": holders,
        }


def quiesce_dir() -> Path:
    """Where gpu-run wrappers register: state_dir()/gpu-quiesce/."""
    return Path(state_dir()) / "gpu-quiesce"


def quiesce_holders(directory: Path | None = None) -> list[QuiesceHolder]:
    """Every registration, judged alive only when its pid still has the same start ticks."""
    folder = directory or quiesce_dir()
    try:
        files = sorted(folder.glob("*.json"))
    except OSError:
        return []
    holders = []
    for file in files:
        try:
            data = json.loads(file.read_text())
            pid, ticks = int(data["pid"]), int(data["start_ticks"])
            command, since = str(data.get("command", "")), float(data.get("since", 0.0))
        except (OSError, ValueError, KeyError, TypeError):
            continue  # a registration being written or garbage; it holds nothing
        current = procs.start_ticks(pid)
        if current is None:
            holders.append(QuiesceHolder(pid, ticks, command, since, False, "gone"))
        elif current != ticks:
            holders.append(QuiesceHolder(pid, ticks, command, since, False, "pid reused"))
        else:
            holders.append(QuiesceHolder(pid, ticks, command, since, True))
    return holders


def is_allowlisted(name: str, command: str, allowlist: Sequence[str]) -> bool:
    """True when the process name or its program's base name matches an allowlist entry (glob)."""
    program = Path(command.split(" ", 1)[0]).name if command else ""
    return any(fnmatchcase(name, entry) or fnmatchcase(program, entry) for entry in allowlist)


def _ancestors(pid: int, stop: set[int]) -> int | None:
    """The first pid among `stop` on the way from `pid` up to init, or None."""
    seen = 0
    while pid > 1 and seen < 256:
        if pid in stop:
            return pid
        stat = procs.read_stat(pid)
        if stat is None:
            return None
        pid, seen = stat.ppid, seen + 1
    return None


def describe_process(
    pid: int, used_memory: Reading, allowlist: Sequence[str], holders: Iterable[int]
) -> GpuProcess:
    """A compute process with its name, user and command (from the procs probe), and how it is
    judged."""
    stat = procs.read_stat(pid)
    name = stat.comm if stat else "?"
    command = procs.command_line(pid)
    return GpuProcess(
        pid=pid,
        used_memory=used_memory,
        name=name,
        user=procs.user_of(pid),
        command=command,
        allowlisted=is_allowlisted(name, command, allowlist),
        holder=_ancestors(pid, set(holders)),
    )


def _text(value: Any) -> str:
    if isinstance(value, Missing):
        return str(value)
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def _number(value: Any) -> Reading:
    if isinstance(value, Missing):
        return str(value)
    return int(value)


def _attribute(value: Any, name: str) -> Reading:
    """A field of an NVML struct, or the reason the struct itself is missing."""
    if isinstance(value, Missing):
        return str(value)
    raw = getattr(value, name, None)
    return int(raw) if raw is not None else str(NA)


def _process_memory(raw: Any) -> Reading:
    """A process's GPU memory: pynvml gives None for NVML_VALUE_NOT_AVAILABLE (MIG, WDDM);
    an older binding may pass the raw all-ones value through."""
    if raw is None or int(raw) >= _NOT_AVAILABLE:
        return str(NA)
    return int(raw)


def _memory_info(nvml: Nvml, handle: Any) -> Any:
    """Memory with the driver's reservation apart from what processes use (struct v2), where
    the binding and driver have it; else v1, whose `used` includes the reservation."""
    calls: list[tuple[Any, ...]] = []
    version = getattr(nvml.module, "nvmlMemory_v2", None)
    if version is not None:
        calls.append(("nvmlDeviceGetMemoryInfo", handle, version))
    calls.append(("nvmlDeviceGetMemoryInfo", handle))
    return nvml.query_any(*calls)


def _compute_processes(nvml: Nvml, handle: Any) -> Any:
    """Compute processes by the newest listing this binding and driver both have."""
    return nvml.query_any(
        ("nvmlDeviceGetComputeRunningProcesses_v3", handle),
        ("nvmlDeviceGetComputeRunningProcesses_v2", handle),
        ("nvmlDeviceGetComputeRunningProcesses", handle),
    )


def _temperature(nvml: Nvml, handle: Any) -> Reading:
    """The GPU's temperature; nvmlDeviceGetTemperature is deprecated (gone in CUDA 14) in
    favour of nvmlDeviceGetTemperatureV, which older drivers lack."""
    sensor = nvml.constant("NVML_TEMPERATURE_GPU", _NVML_TEMPERATURE_GPU)
    return _number(
        nvml.query_any(
            ("nvmlDeviceGetTemperatureV", handle, sensor),
            ("nvmlDeviceGetTemperature", handle, sensor),
        )
    )


def read_card(nvml: Nvml, index: int, allowlist: Sequence[str], holders: Iterable[int]) -> GpuCard:
    """One card; a value that NVML refuses becomes "n/a" or "not read", the rest still read."""
    handle = nvml.query("nvmlDeviceGetHandleByIndex", index)
    if isinstance(handle, Missing):
        unread = str(handle)
        return GpuCard(
            index, "?", "", unread, unread, unread, unread, unread, unread, unread, problem=unread
        )
    memory = _memory_info(nvml, handle)
    rates = nvml.query("nvmlDeviceGetUtilizationRates", handle)
    found = _compute_processes(nvml, handle)
    if isinstance(found, Missing):
        processes: Reading | list[GpuProcess] = str(found)
    else:
        holder_pids = list(holders)
        processes = [
            describe_process(
                int(entry.pid),
                _process_memory(getattr(entry, "usedGpuMemory", None)),
                allowlist,
                holder_pids,
            )
            for entry in found
        ]
    return GpuCard(
        index=index,
        name=_text(nvml.query("nvmlDeviceGetName", handle)),
        uuid=_text(nvml.query("nvmlDeviceGetUUID", handle)),
        memory_total=_attribute(memory, "total"),
        memory_used=_attribute(memory, "used"),
        memory_free=_attribute(memory, "free"),
        utilization=_attribute(rates, "gpu"),
        memory_utilization=_attribute(rates, "memory"),
        temperature=_temperature(nvml, handle),
        processes=processes,
    )


def gpu_snapshot(
    allowlist: Sequence[str] = (),
    *,
    nvml: Nvml | None = None,
    quiesce: Path | None = None,
) -> GpuSnapshot:
    """Every card of this host with its compute processes, and the quiesce holders."""
    nvml = nvml or shared_nvml()
    holders = quiesce_holders(quiesce)
    if not nvml.start():
        return GpuSnapshot(nvml.state, nvml.reason, holders=holders, taken_at=time.time())
    live = [h.pid for h in holders if h.alive]
    driver = nvml.query("nvmlSystemGetDriverVersion")
    cards = [read_card(nvml, index, allowlist, live) for index in range(nvml.device_count)]
    return GpuSnapshot(
        READY,
        driver_version=_text(driver),
        cards=cards,
        holders=holders,
        taken_at=time.time(),
    )
