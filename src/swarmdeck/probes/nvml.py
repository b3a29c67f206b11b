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
# Errors that mean "this driver does not have this function (or this version of its struct)".
_MISSING_ERRORS = ("NVMLError_FunctionNotFound", "NVMLError_ArgumentVersionMismatch")


class _NoSuchError(Exception):
    """Stands for an exception class a binding does not define; never raised."""


def _mismatch_error(module: Any) -> type[Exception]:
    """pynvml's NVMLLibraryMismatchError: an unversioned wrapper (e.g.
    nvmlDeviceGetComputeRunningProcesses) raises it, not an NVMLError, when the driver lacks
    the versioned function behind it."""
    found = getattr(module, "NVMLLibraryMismatchError", None)
    return found if isinstance(found, type) and issubclass(found, Exception) else _NoSuchError


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
                self._shutdown()
                return False
            if count == 0:
                self._set(NO_GPU, "NVML sees no device")
                self._shutdown()
                return False
            self.device_count = count
            self._started = True
            self._set(READY, "")
            return True

    def _shutdown(self) -> None:
        """Give NVML back after a start that found nothing to query."""
        try:
            self.module.nvmlShutdown()
        except self.module.NVMLError as error:
            # The state already says why NVML is not used; a failed shutdown changes nothing.
            log.debug("nvmlShutdown failed: %s", error)

    def _set(self, state: str, reason: str) -> None:
        self.state, self.reason = state, reason

    def query(self, name: str, *args: Any) -> Any:
        """Call NVML function `name`; its value, or a Missing saying why there is none."""
        return self.query_any((name, *args))

    def query_any(self, *calls: tuple[Any, ...]) -> Any:
        """The value of the first call, each `(name, *args)`, that this binding and driver have.

        Newer NVML versions add versioned functions (`_v2`, `_v3`, `…V`) and drop old ones, and
        an older nvidia-ml-py lacks the new names, so a value may have to be asked for in more
        than one way. A function that is missing here (not in the binding, not in the driver,
        or a struct version the driver does not take) moves on to the next; when none is left
        the value is "n/a", logged once.
        """
        module = self.module
        for name, *args in calls:
            function = getattr(module, name, None)
            if function is None:
                continue
            try:
                return function(*args)
            except module.NVMLError as error:
                kind = type(error).__name__
                if kind in _MISSING_ERRORS:
                    continue
                if kind == "NVMLError_NotSupported":
                    return NA
                if kind == "NVMLError_Uninitialized":
                    # Another user of NVML in this process shut it down: start it again on
                    # the next snapshot instead of reading "not read" for ever.
                    self._restart()
                return not_read(error)
            except _mismatch_error(module):
                continue
        self._log_missing(" / ".join(str(call[0]) for call in calls))
        return NA

    def _restart(self) -> None:
        with self._lock:
            self._started = False
            self._set(NOT_READ, "NVML was shut down; starting it again")

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
