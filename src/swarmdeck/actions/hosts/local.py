"""This machine as a host: its memory book says whether a job fits, and a detached
`swarmdeck run` runs it, so the job is caged, admitted and recorded as any other.

The job runs in place (no copy), so fetch only lists what exists and clean has nothing to do.
Following reads the runner's output file until its ledger row says the job ended.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from swarmdeck.actions.booking import Decision, decide_admission
from swarmdeck.actions.detach import DETACH_FD_ENV, relaunch_argv
from swarmdeck.actions.hosts.base import Ended, Fit, Handle, Host, HostError, JobSpec
from swarmdeck.actions.run_request import RunRequest
from swarmdeck.exitcodes import ExitCode
from swarmdeck.ledger import job_row
from swarmdeck.ledger.schema import ACTIVE
from swarmdeck.probes.host import host_snapshot
from swarmdeck.probes.machine import local_host_name
from swarmdeck.probes.memory_book import memory_book
from swarmdeck.probes.procs import ProcessIdentity
from swarmdeck.sizes import exact_size, format_size

if TYPE_CHECKING:
    from swarmdeck.config import Config
    from swarmdeck.probes.gpu import GpuSnapshot
    from swarmdeck.state import StateStore

POLL = 0.1
"""Seconds between looks at the output file and the ledger row while following."""


class LocalHost(Host):
    """This machine, with its config and state store."""

    kind = "local"

    def __init__(self, config: Config, store: StateStore) -> None:
        self.config = config
        self.store = store
        self.name = local_host_name()

    def fits(self, job: JobSpec) -> Fit:
        book = memory_book(self.config, self.store, self.name)
        if book.problem:
            return Fit(self.name, False, False, reason=f"no cage here: {book.problem}")
        decision = decide_admission(job.booking, book)
        threads = host_snapshot(self.config, self.store).cores.threads_free
        usable = min(book.room, book.machine_room)
        reason = {
            Decision.ADMIT: "",
            Decision.WAIT: f"needs {format_size(job.booking)}, room {format_size(max(0, usable))}",
            Decision.NEVER: f"books {format_size(job.booking)}, the whole slice is "
            f"{format_size(book.slice_cap)}",
        }[decision]
        if job.gpu:
            from swarmdeck.probes.gpu import gpu_snapshot
            from swarmdeck.probes.nvml import NO_GPU, READY

            gpus = gpu_snapshot(self.config.gpu.allowlist)
            if gpus.state == NO_GPU:
                return Fit(self.name, False, False, usable, threads, 0,
                           f"no GPU card here ({gpus.reason})")
            free = free_cards(gpus)
            if not free:
                busy = ("every GPU here has a foreign process on it" if gpus.state == READY
                        else f"GPUs {gpus.state} ({gpus.reason})")
                return Fit(self.name, False, decision is not Decision.NEVER, usable, threads, 0,
                           busy)
            return Fit(self.name, decision is Decision.ADMIT, decision is not Decision.NEVER,
                       usable, threads, free, reason)
        return Fit(
            self.name, decision is Decision.ADMIT, decision is not Decision.NEVER, usable,
            threads, reason=reason,
        )

    def submit(self, job: JobSpec) -> Handle:
        """A detached runner; returns once it is admitted (it queues here until then)."""
        request = RunRequest(
            argv=list(job.argv), cap=exact_size(job.cap) if job.cap else None, label=job.label,
            threads=job.threads, detach=True, cwd=job.cwd,
        )
        read_fd, write_fd = os.pipe()
        child = subprocess.Popen(
            relaunch_argv(request), cwd=job.cwd, env={**os.environ, DETACH_FD_ENV: str(write_fd)},
            stdin=subprocess.DEVNULL, pass_fds=(write_fd,), start_new_session=True,
        )
        os.close(write_fd)
        with os.fdopen(read_fd, "rb") as pipe:
            line = pipe.readline().decode().split()
        if not line or line[0] != "admitted":
            code = child.wait()
            known = code in ExitCode._value2member_map_
            raise HostError(
                f"job was not started here (exit {code})",
                ExitCode(code) if known else ExitCode.USAGE,
            )
        return Handle(self.name, int(line[1]), "", "", {"output": line[2]})

    def _row(self, job_id: int) -> dict[str, object]:
        with self.store.read() as conn:
            row = job_row(conn, job_id)
        if row is None:
            raise HostError(f"job {job_id} is not in the ledger")
        return dict(row)

    def follow(self, handle: Handle, out: Callable[[bytes], None]) -> Ended:
        path = Path(handle.extra["output"])
        offset = 0
        while True:
            row = self._row(handle.job_id)
            with path.open("rb") as source:
                source.seek(offset)
                data = source.read()
            offset += len(data)
            if data:
                out(data)
            if row["state"] not in ACTIVE:
                code = row["exit_code"]
                return Ended(
                    int(code) if isinstance(code, int) else 255, str(row["outcome"] or "")
                )
            time.sleep(POLL)

    def stop(self, handle: Handle, signum: int) -> None:
        """Signal the job's runner (it stops its caged tree) and wait until its row ends."""
        row = self._row(handle.job_id)
        pid, ticks = row["runner_pid"], row["runner_start_ticks"]
        if isinstance(pid, int) and isinstance(ticks, int):
            runner = ProcessIdentity(pid, ticks)
            if runner.is_alive():
                os.kill(pid, signum)
            while runner.is_alive() and self._row(handle.job_id)["state"] in ACTIVE:
                time.sleep(POLL)

    def fetch(self, handle: Handle, paths: tuple[str, ...], into: Path) -> list[Path]:
        return [into / path for path in paths if (into / path).exists()]



def free_cards(snapshot: GpuSnapshot) -> int:
    """Cards with no compute process that is not expected (none when there is no card)."""
    return sum(1 for card in snapshot.cards if not any(p.foreign for p in card.process_list))
