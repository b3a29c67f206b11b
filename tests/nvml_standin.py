"""A scripted NVML stand-in: these machines have no GPU, so the NVML layer is tested with this.

It answers the pynvml functions swarmdeck calls from a script of cards, and raises pynvml's
own error classes (importing pynvml needs no GPU library; only calling it does).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pynvml

from swarmdeck.probes.procs import read_stat

GIB = 1024**3


@dataclass
class ScriptedCard:
    """One card: its readings, its compute processes (pid, bytes) and the calls that fail."""

    name: str = "NVIDIA H100 80GB HBM3"
    uuid: str = "GPU-00000000-0000-0000-0000-000000000000"
    total: int = 80 * GIB
    used: int = 2 * GIB
    utilization: int = 37
    memory_utilization: int = 12
    temperature: int = 41
    processes: list[tuple[int, int | None]] = field(default_factory=list)
    errors: dict[str, int] = field(default_factory=dict)


class ScriptedNvml:
    """Stands in for the pynvml module; `calls` records every call by name."""

    def __init__(
        self,
        cards: list[ScriptedCard] | None = None,
        *,
        init_error: int | None = None,
        absent: tuple[str, ...] = (),
    ) -> None:
        self.cards = cards if cards is not None else [ScriptedCard()]
        self.init_error = init_error
        self.absent = set(absent)
        self.calls: list[str] = []

    def __getattribute__(self, name: str) -> Any:
        if name.startswith("nvml") and name in object.__getattribute__(self, "absent"):
            raise AttributeError(name)
        return object.__getattribute__(self, name)

    def __getattr__(self, name: str) -> Any:
        if name.startswith(("NVMLError", "NVML_")):
            return getattr(pynvml, name)
        raise AttributeError(name)

    def _card(self, call: str, handle: int) -> ScriptedCard:
        self.calls.append(call)
        card = self.cards[handle]
        if call in card.errors:
            raise pynvml.NVMLError(card.errors[call])
        return card

    def nvmlInit(self) -> None:
        self.calls.append("nvmlInit")
        if self.init_error is not None:
            raise pynvml.NVMLError(self.init_error)

    def nvmlShutdown(self) -> None:
        self.calls.append("nvmlShutdown")

    def nvmlDeviceGetCount(self) -> int:
        self.calls.append("nvmlDeviceGetCount")
        return len(self.cards)

    def nvmlSystemGetDriverVersion(self) -> str:
        self.calls.append("nvmlSystemGetDriverVersion")
        return "575.57.08"

    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:
        self._card("nvmlDeviceGetHandleByIndex", index)
        return index

    def nvmlDeviceGetName(self, handle: int) -> str:
        return self._card("nvmlDeviceGetName", handle).name

    def nvmlDeviceGetUUID(self, handle: int) -> str:
        return self._card("nvmlDeviceGetUUID", handle).uuid

    def nvmlDeviceGetMemoryInfo(self, handle: int) -> SimpleNamespace:
        card = self._card("nvmlDeviceGetMemoryInfo", handle)
        return SimpleNamespace(total=card.total, used=card.used, free=card.total - card.used)

    def nvmlDeviceGetUtilizationRates(self, handle: int) -> SimpleNamespace:
        card = self._card("nvmlDeviceGetUtilizationRates", handle)
        return SimpleNamespace(gpu=card.utilization, memory=card.memory_utilization)

    def nvmlDeviceGetTemperature(self, handle: int, sensor: int) -> int:
        assert sensor == pynvml.NVML_TEMPERATURE_GPU
        return self._card("nvmlDeviceGetTemperature", handle).temperature

    def nvmlDeviceGetComputeRunningProcesses(self, handle: int) -> list[SimpleNamespace]:
        """Like the driver, lists a process only while it runs (not once it exited)."""
        card = self._card("nvmlDeviceGetComputeRunningProcesses", handle)
        return [
            SimpleNamespace(pid=pid, usedGpuMemory=used)
            for pid, used in card.processes
            if _running(pid)
        ]


def _running(pid: int) -> bool:
    stat = read_stat(pid)
    return stat is not None and stat.state not in ("Z", "X")
