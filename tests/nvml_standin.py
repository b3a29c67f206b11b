"""A scripted NVML stand-in: these machines have no GPU, so the NVML layer is tested with this.

What is scripted is the C library under pynvml (libnvidia-ml.so.1): the calls it answers, the
C structs it fills, the return codes it gives. Everything above it is the real pynvml of the
venv (nvidia-ml-py): its function names, its wrappers, its struct classes, its str/bytes
conversion, its NVML_VALUE_NOT_AVAILABLE handling and its exception classes. A name swarmdeck
asks the module for that the real pynvml does not have fails the test loudly, so the stand-in
cannot accept a call the real binding would not.
"""

from __future__ import annotations

import ctypes
import functools
import inspect
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pynvml

from swarmdeck.probes.procs import read_stat

GIB = 1024**3
NOT_AVAILABLE = pynvml.NVML_VALUE_NOT_AVAILABLE_ulonglong.value
_RESERVED = 512 * 1024**2
_VERSIONED = re.compile(r"(_v\d+|V)$")


@dataclass
class ScriptedCard:
    """One card: its readings, its compute processes (pid, bytes; None: the driver does not
    say) and the calls that fail (C symbol, with or without its _vN / V suffix → NVML code).

    `mig`: the card is in MIG mode: utilisation is not supported and no process's memory is
    reported, as on real MIG cards queried through the parent device.
    """

    name: str = "NVIDIA H100 80GB HBM3"
    uuid: str = "GPU-00000000-0000-0000-0000-000000000000"
    total: int = 80 * GIB
    used: int = 2 * GIB
    utilization: int = 37
    memory_utilization: int = 12
    temperature: int = 41
    processes: list[tuple[int, int | None]] = field(default_factory=list)
    errors: dict[str, int] = field(default_factory=dict)
    mig: bool = False


def _running(pid: int) -> bool:
    stat = read_stat(pid)
    return stat is not None and stat.state not in ("Z", "X")


def _scripted_error(card: ScriptedCard, symbol: str) -> int | None:
    """The code the script makes `symbol` fail with, named with or without its version."""
    for key in (symbol, _VERSIONED.sub("", symbol)):
        if key in card.errors:
            return card.errors[key]
    return None


def _target(argument: Any) -> Any:
    """The ctypes object a `byref(...)` argument points at (buffers come as themselves)."""
    return getattr(argument, "_obj", argument)


class ScriptedLibrary:
    """Answers the C symbols pynvml looks up in libnvidia-ml.so.1, from a script of cards.

    A symbol in `absent` is one this driver lacks: pynvml turns the missing attribute into
    NVMLError_FunctionNotFound, exactly as with an older real driver.
    """

    def __init__(
        self,
        cards: list[ScriptedCard],
        init_error: int | None,
        absent: set[str],
        failing: dict[str, int],
    ) -> None:
        self.cards = cards
        self.init_error = init_error
        self.absent = absent
        self.failing = failing
        self.calls: list[str] = []
        self._devices = [pynvml.struct_c_nvmlDevice_t() for _ in cards]

    def __getattribute__(self, name: str) -> Any:
        if name.startswith("nvml"):
            if name in object.__getattribute__(self, "absent"):
                raise AttributeError(name)
            object.__getattribute__(self, "calls").append(name)
        return object.__getattribute__(self, name)

    def _card(self, symbol: str, handle: Any) -> ScriptedCard | int:
        """The card a handle points at, or the NVML code its script says `symbol` fails with."""
        address = ctypes.addressof(handle.contents)
        index = next(i for i, d in enumerate(self._devices) if ctypes.addressof(d) == address)
        card = self.cards[index]
        error = _scripted_error(card, symbol)
        return card if error is None else error

    def nvmlInitWithFlags(self, flags: int) -> int:
        return self.init_error if self.init_error is not None else pynvml.NVML_SUCCESS

    def nvmlShutdown(self) -> int:
        return self.failing.get("nvmlShutdown", pynvml.NVML_SUCCESS)

    def nvmlDeviceGetCount_v2(self, count: Any) -> int:
        if "nvmlDeviceGetCount" in self.failing:
            return self.failing["nvmlDeviceGetCount"]
        _target(count).value = len(self.cards)
        return pynvml.NVML_SUCCESS

    def nvmlSystemGetDriverVersion(self, buffer: Any, size: Any) -> int:
        buffer.value = b"575.57.08"
        return pynvml.NVML_SUCCESS

    def nvmlDeviceGetHandleByIndex_v2(self, index: Any, device: Any) -> int:
        position = index.value
        if position >= len(self.cards):
            return pynvml.NVML_ERROR_INVALID_ARGUMENT
        error = _scripted_error(self.cards[position], "nvmlDeviceGetHandleByIndex_v2")
        if error is not None:
            return error
        _target(device).contents = self._devices[position]
        return pynvml.NVML_SUCCESS

    def _text(
        self, symbol: str, handle: Any, buffer: Any, pick: Callable[[ScriptedCard], str]
    ) -> int:
        card = self._card(symbol, handle)
        if isinstance(card, int):
            return card
        buffer.value = pick(card).encode()
        return pynvml.NVML_SUCCESS

    def nvmlDeviceGetName(self, handle: Any, buffer: Any, size: Any) -> int:
        return self._text("nvmlDeviceGetName", handle, buffer, lambda card: card.name)

    def nvmlDeviceGetUUID(self, handle: Any, buffer: Any, size: Any) -> int:
        return self._text("nvmlDeviceGetUUID", handle, buffer, lambda card: card.uuid)

    def _memory(self, symbol: str, handle: Any, memory: Any) -> int:
        card = self._card(symbol, handle)
        if isinstance(card, int):
            return card
        out = _target(memory)
        out.total = card.total
        if symbol.endswith("_v2"):
            # v2 counts the driver's reservation apart: used + reserved + free = total.
            out.reserved = min(_RESERVED, card.total - card.used)
            out.used = card.used
            out.free = card.total - card.used - out.reserved
        else:
            # v1 counts the reservation as used.
            out.used = min(card.total, card.used + _RESERVED)
            out.free = card.total - out.used
        return pynvml.NVML_SUCCESS

    def nvmlDeviceGetMemoryInfo(self, handle: Any, memory: Any) -> int:
        return self._memory("nvmlDeviceGetMemoryInfo", handle, memory)

    def nvmlDeviceGetMemoryInfo_v2(self, handle: Any, memory: Any) -> int:
        if _target(memory).version != pynvml.nvmlMemory_v2:
            return pynvml.NVML_ERROR_ARGUMENT_VERSION_MISMATCH
        return self._memory("nvmlDeviceGetMemoryInfo_v2", handle, memory)

    def nvmlDeviceGetUtilizationRates(self, handle: Any, rates: Any) -> int:
        card = self._card("nvmlDeviceGetUtilizationRates", handle)
        if isinstance(card, int):
            return card
        if card.mig:
            return pynvml.NVML_ERROR_NOT_SUPPORTED
        out = _target(rates)
        out.gpu, out.memory = card.utilization, card.memory_utilization
        return pynvml.NVML_SUCCESS

    def _temperature(self, symbol: str, handle: Any, sensor: int) -> ScriptedCard | int:
        card = self._card(symbol, handle)
        if isinstance(card, int):
            return card
        if sensor != pynvml.NVML_TEMPERATURE_GPU:
            return pynvml.NVML_ERROR_INVALID_ARGUMENT
        return card

    def nvmlDeviceGetTemperature(self, handle: Any, sensor: Any, value: Any) -> int:
        card = self._temperature("nvmlDeviceGetTemperature", handle, sensor.value)
        if isinstance(card, int):
            return card
        _target(value).value = card.temperature
        return pynvml.NVML_SUCCESS

    def nvmlDeviceGetTemperatureV(self, handle: Any, reading: Any) -> int:
        out = _target(reading)
        if out.version != pynvml.nvmlTemperature_v1:
            return pynvml.NVML_ERROR_ARGUMENT_VERSION_MISMATCH
        card = self._temperature("nvmlDeviceGetTemperatureV", handle, out.sensorType)
        if isinstance(card, int):
            return card
        out.temperature = card.temperature
        return pynvml.NVML_SUCCESS

    def _processes(self, symbol: str, handle: Any, count: Any, infos: Any) -> int:
        """Like the driver: a process is listed only while it runs; with no buffer (or one too
        small) the count is given with INSUFFICIENT_SIZE."""
        card = self._card(symbol, handle)
        if isinstance(card, int):
            return card
        running = [(pid, used) for pid, used in card.processes if _running(pid)]
        wanted = _target(count)
        if not running:
            wanted.value = 0
            return pynvml.NVML_SUCCESS
        if infos is None or wanted.value < len(running):
            wanted.value = len(running)
            return pynvml.NVML_ERROR_INSUFFICIENT_SIZE
        for slot, (pid, used) in zip(infos, running, strict=False):
            slot.pid = pid
            slot.usedGpuMemory = NOT_AVAILABLE if used is None or card.mig else used
            slot.gpuInstanceId = 1 if card.mig else 0xFFFFFFFF
            slot.computeInstanceId = 0 if card.mig else 0xFFFFFFFF
        wanted.value = len(running)
        return pynvml.NVML_SUCCESS

    def nvmlDeviceGetComputeRunningProcesses_v3(self, handle: Any, count: Any, infos: Any) -> int:
        return self._processes("nvmlDeviceGetComputeRunningProcesses_v3", handle, count, infos)

    def nvmlDeviceGetComputeRunningProcesses_v2(self, handle: Any, count: Any, infos: Any) -> int:
        return self._processes("nvmlDeviceGetComputeRunningProcesses_v2", handle, count, infos)


# pynvml keeps its library in a module global; each call swaps this stand-in's library in
# for the length of the call, so stand-ins of different tests (or threads) never meet.
_swap = threading.RLock()


class ScriptedNvml:
    """Stands in for the pynvml module: the real module's functions over a scripted library.

    Args:
        cards: the cards the driver reports (default: one H100 with nothing on it).
        init_error: the NVML code nvmlInit fails with (None: it succeeds).
        absent: C symbols this driver lacks (calls to them fail with FunctionNotFound).
        failing: NVML codes that nvmlDeviceGetCount or nvmlShutdown fail with.
        missing_bindings: pynvml functions to hide, as an older nvidia-ml-py lacks them.
        bytes_strings: give text as bytes, as nvidia-ml-py before 11.515 did.
    """

    def __init__(
        self,
        cards: list[ScriptedCard] | None = None,
        *,
        init_error: int | None = None,
        absent: tuple[str, ...] = (),
        failing: dict[str, int] | None = None,
        missing_bindings: tuple[str, ...] = (),
        bytes_strings: bool = False,
    ) -> None:
        self.library = ScriptedLibrary(
            cards if cards is not None else [ScriptedCard()],
            init_error,
            set(absent),
            failing or {},
        )
        self.missing_bindings = set(missing_bindings)
        self.bytes_strings = bytes_strings

    @property
    def calls(self) -> list[str]:
        """Every C symbol called, in order."""
        return self.library.calls

    @property
    def init_error(self) -> int | None:
        return self.library.init_error

    @init_error.setter
    def init_error(self, code: int | None) -> None:
        self.library.init_error = code

    def __getattr__(self, name: str) -> Any:
        if name in self.missing_bindings:
            raise AttributeError(name)
        if not hasattr(pynvml, name):
            raise AssertionError(f"the real pynvml has no {name}: swarmdeck must not call it")
        real = getattr(pynvml, name)
        if not (name.startswith("nvml") and inspect.isfunction(real)):
            return real

        @functools.wraps(real)
        def call(*args: Any, **kwargs: Any) -> Any:
            with _swap:
                saved = pynvml.nvmlLib, pynvml._nvmlGetFunctionPointer_cache
                pynvml.nvmlLib, pynvml._nvmlGetFunctionPointer_cache = self.library, {}
                try:
                    result = real(*args, **kwargs)
                finally:
                    pynvml.nvmlLib, pynvml._nvmlGetFunctionPointer_cache = saved
            if self.bytes_strings and isinstance(result, str):
                return result.encode()
            return result

        return call
