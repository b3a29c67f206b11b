"""The one owner of NVML: it initialises the library once, keeps it, and turns failures into states.

Initialising NVML per query costs milliseconds per card and can stall a caller, so it is done
once per process and kept. Nothing NVML does may crash a probe: a missing library, an unloaded
driver or no card at all is the normal "no GPU" state; a field the card does not support is
"n/a"; a function the installed driver lacks is "n/a" and logged once; any other error in the
middle of a query makes that one value "not read: ERROR".
"""

from __future__ import annotations

import importlib
import logging
import threading
from dataclasses import dataclass
from types import ModuleType
from typing import Any

log = logging.getLogger(__name__)

READY = "ok"
NO_GPU = "no GPU"
NOT_READ = "not read"

# Errors that mean "this machine has no usable NVIDIA GPU", not "something went wrong".
_ABSENT_ERRORS = ("NVMLError_LibraryNotFound", "NVMLError_DriverNotLoaded")


@dataclass(frozen=True)
class Missing:
    """A value NVML did not give: "n/a" (not supported here) or "not read: ERROR"."""

    text: str

    def __str__(self) -> str:
        return self.text


NA = Missing("n/a")


def not_read(error: object) -> Missing:
    return Missing(f"not read: {error}")


class Nvml:
    """NVML for this process: started on first use, then kept until the process ends.

    Args:
        module: the pynvml module, or a stand-in with the same names (tests); None imports
            pynvml on first use.
    """

    def __init__(self, module: ModuleType | Any | None = None) -> None:
        self._module = module
        self._lock = threading.Lock()
        self._started = False
        self.state = NOT_READ
        self.reason = "not started"
        self.device_count = 0
        self._logged_missing: set[str] = set()

    @property
    def module(self) -> Any:
        assert self._module is not None, "start() first"
        return self._module

    def start(self) -> bool:
        """Initialise NVML if not done yet; True when cards can be queried.

        "no GPU" is final for this process; an unexpected failure ("not read") is retried on
        the next call.
        """
        with self._lock:
            if self._started or self.state == NO_GPU:
                return self._started
            if self._module is None:
                try:
                    self._module = importlib.import_module("pynvml")
                except ImportError as error:
                    self._set(NO_GPU, f"nvidia-ml-py is not installed ({error})")
                    return False
            error_class = self._module.NVMLError
            try:
                self._module.nvmlInit()
            except error_class as error:
                absent = type(error).__name__ in _ABSENT_ERRORS
                self._set(NO_GPU if absent else NOT_READ, str(error))
                return False
            try:
                count = int(self._module.nvmlDeviceGetCount())
            except error_class as error:
                self._set(NOT_READ, f"device count: {error}")
                self._module.nvmlShutdown()
                return False
            if count == 0:
                self._set(NO_GPU, "NVML sees no device")
                self._module.nvmlShutdown()
                return False
            self.device_count = count
            self._started = True
            self._set(READY, "")
            return True

    def _set(self, state: str, reason: str) -> None:
        self.state, self.reason = state, reason

    def query(self, name: str, *args: Any) -> Any:
        """Call NVML function `name`; its value, or a Missing saying why there is none."""
        module = self.module
        function = getattr(module, name, None)
        if function is None:
            self._log_missing(name)
            return NA
        try:
            return function(*args)
        except module.NVMLError as error:
            kind = type(error).__name__
            if kind == "NVMLError_NotSupported":
                return NA
            if kind == "NVMLError_FunctionNotFound":
                self._log_missing(name)
                return NA
            return not_read(error)

    def _log_missing(self, name: str) -> None:
        if name not in self._logged_missing:
            self._logged_missing.add(name)
            log.warning("NVML function %s is not in this driver; its values show n/a", name)

    def constant(self, name: str, default: int) -> int:
        """An NVML constant (e.g. NVML_TEMPERATURE_GPU) from the module, else its known value."""
        return int(getattr(self.module, name, default))


_shared: Nvml | None = None
_shared_lock = threading.Lock()


def shared_nvml() -> Nvml:
    """The process-wide NVML, started once and kept."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = Nvml()
        return _shared
