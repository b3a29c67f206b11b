"""Cages as transient systemd scopes, for systemd machines that delegate no cgroup subtree.

`systemd-run --scope` asks systemd for the scope, moves itself into it and then execs the
command, so the command starts inside its cap. systemd removes the scope as soon as its last
process is gone, so the job first waits at a gate inside it (a shell that stops itself) until
the runner has opened the scope's counters: a job killed at its cap at once is still told 250.
The scope's cgroup is read like any other cage: v2 counters where the memory controller is
unified, v1 eventfds otherwise.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Sequence

from swarmdeck.actions.cage.base import Backend, Cage, CageError, cage_name
from swarmdeck.actions.cage.v1 import V1Cage
from swarmdeck.actions.cage.v2 import V2Cage
from swarmdeck.actions.oom import OomEvidence

SYSTEMCTL_TIMEOUT = 10.0
GATE = ("/bin/sh", "-c", 'kill -STOP $$ && exec "$@"', "sh")
"""The job's first step inside its scope: stop until the runner continues it, then exec argv."""


def user_flag() -> list[str]:
    """A non-root caller talks to its own user manager."""
    return [] if os.geteuid() == 0 else ["--user"]


def scope_command(
    argv: Sequence[str], unit: str, slice_unit: str, cap: int
) -> list[str]:
    """The systemd-run line that starts argv inside a capped scope, without swap."""
    return [
        "systemd-run", *user_flag(), "--scope", "--quiet", "--collect",
        f"--unit={unit}", f"--slice={slice_unit}",
        "-p", f"MemoryMax={cap}", "-p", "MemorySwapMax=0", "-p", "OOMPolicy=kill",
        "--", *argv,
    ]


def _systemctl(*args: str) -> None:
    command = ["systemctl", *user_flag(), *args]
    try:
        result = subprocess.run(
            command, capture_output=True, text=True, timeout=SYSTEMCTL_TIMEOUT, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise CageError(f"{' '.join(command)} failed: {error}") from error
    if result.returncode != 0:
        why = (result.stderr.strip().splitlines() or ["no message"])[-1]
        raise CageError(f"{' '.join(command)} failed: {why}")


class ScopeCage(Cage):
    """A job in its own transient scope; reading is delegated to a v1 or v2 cage once it runs."""

    def __init__(self, path: str, cap: int, slice_path: str, unit: str, slice_unit: str):
        super().__init__(path, cap)
        self.unit = unit
        self.slice_unit = slice_unit
        reader_type = V2Cage if os.path.exists(f"{slice_path}/memory.events") else V1Cage
        self._reader: Cage = reader_type(path, cap, slice_path)

    def command(self, argv: Sequence[str]) -> list[str]:
        return scope_command([*GATE, *argv], self.unit, self.slice_unit, self.cap)

    def join(self) -> None:
        """systemd-run moves the process into the scope itself, before it execs the command."""

    def after_start(self, pid: int) -> None:
        """Wait for the job to stop at its gate, arm the reader, and let it go on. A job that
        ended before it got there (systemd-run refused) is left unreaped for the runner."""
        held = os.waitid(os.P_PID, pid, os.WSTOPPED | os.WEXITED | os.WNOWAIT)
        if held is None or held.si_code != os.CLD_STOPPED:
            return
        if os.path.exists(self.path):
            self._reader.before_start()
        os.kill(pid, signal.SIGCONT)

    def wake_fds(self) -> list[int]:
        return self._reader.wake_fds()

    def priority_fds(self) -> list[int]:
        return self._reader.priority_fds()

    def drain(self) -> None:
        self._reader.drain()

    def lost_process(self) -> bool:
        return self._reader.lost_process()

    def oom_before_removal(self) -> bool:
        return self._reader.oom_before_removal()

    def evidence(self) -> OomEvidence:
        return self._reader.evidence()

    def remove(self) -> None:
        # systemd removes a collected scope's cgroup itself once its last process is gone;
        # only the notifications held here are released.
        self._reader.release()


class ScopeBackend(Backend):
    """A systemd slice unit capped with MemoryMax; each job is a scope inside it."""

    kind = "systemd-scope"

    def prepare_slice(self, slice_cap: int) -> None:
        unit = self.site.unit
        _systemctl("start", unit)
        _systemctl("set-property", "--runtime", unit, f"MemoryMax={slice_cap}",
                   "MemorySwapMax=0")

    def job_path(self, job_id: int) -> str:
        return f"{self.slice_path}/{self._unit(job_id)}.scope"

    def _unit(self, job_id: int) -> str:
        return f"swarmdeck-{cage_name(job_id, os.getpid())}"

    def create_cage(self, job_id: int, cap: int) -> Cage:
        return ScopeCage(
            self.job_path(job_id), cap, self.slice_path, self._unit(job_id), self.site.unit
        )
