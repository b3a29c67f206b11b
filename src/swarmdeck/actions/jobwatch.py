"""Watching a caged job until it ends: memory samples, OOM notifications, timeout, signals.

One select() loop waits on the job's pidfd, the cage's OOM eventfds and the runner's signal
pipe, and samples the cage's working set every interval in between. However the job ends, what
is left of its tree and its cage is stopped before the runner reports, so no process outlives
its job: on v1 the kernel kills only one process, and a job that timed out or whose runner was
told to stop must not leave children behind.
"""

from __future__ import annotations

import os
import select
import signal
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from swarmdeck.actions.booking import LEAST_MARGIN_PERCENT
from swarmdeck.actions.cage import Cage
from swarmdeck.actions.kill import stop_tree
from swarmdeck.actions.oom import outgrew_booking
from swarmdeck.actions.spawn import STOP_SIGNALS
from swarmdeck.durations import whole_milliseconds
from swarmdeck.probes.procs import ProcessIdentity

if TYPE_CHECKING:
    from collections.abc import Callable
    from types import FrameType

    from swarmdeck.actions.spawn import Child

LEFTOVER_GRACE = 1.0
"""Grace for processes a job left in its cage after its main process exited."""

EXITED = "exit"
OOM = "oom"
TIMEOUT = "timeout"
SIGNALLED = "signal"


class StopSignals:
    """TERM, INT and HUP to the runner: remembered, and visible to select() through a pipe."""

    def __init__(self) -> None:
        self.received: int | None = None
        self.read_fd, self._write_fd = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self._previous: dict[int, object] = {}
        self._previous_wakeup = -1

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.received is None:
            self.received = signum

    def install(self) -> None:
        for sig in STOP_SIGNALS:
            if signal.getsignal(sig) == signal.SIG_IGN:
                # Ignored on entry (nohup, a background job of a script) stays ignored, as a
                # shell leaves it, for the runner and for the job it starts.
                continue
            self._previous[sig] = signal.signal(sig, self._handle)
        self._previous_wakeup = signal.set_wakeup_fd(self._write_fd)

    def pending(self) -> int | None:
        """The first stop signal received so far, if any."""
        try:
            while os.read(self.read_fd, 512):
                pass
        except BlockingIOError:
            pass
        return self.received

    def restore(self) -> None:
        signal.set_wakeup_fd(self._previous_wakeup)
        for sig, previous in self._previous.items():
            signal.signal(sig, previous)  # type: ignore[arg-type]
        os.close(self.read_fd)
        os.close(self._write_fd)


@dataclass(frozen=True)
class Watched:
    """How a job's run ended."""

    returncode: int
    """The main process's status as Popen reports it (negative: killed by that signal)."""
    ended_by: str
    """exit, oom, timeout or signal."""
    signum: int | None
    """The signal the runner received, when ended_by is signal."""
    working_set_peak: int
    """The largest sampled working set (usage minus inactive page cache)."""
    duration: float
    peak_at: float
    """Seconds from the start to the sample at which the working set last rose: passed its
    level at the rise before by more than booking.LEAST_MARGIN_PERCENT, the noise of
    measuring a peak."""


def watch(
    proc: Child,
    job: ProcessIdentity,
    cage: Cage,
    timeout: float | None,
    interval: float,
    signals: StopSignals,
    grace: float,
    outgrown: tuple[int, Callable[[], None]] | None = None,
    lighten: Callable[[int, float, float], int | None] | None = None,
) -> Watched:
    """Wait for the job to end one way or another, then make sure nothing of it is left.
    `outgrown` is the job's booking and what to do once, the first time a sample passes it.
    `lighten` is asked after each sample, with the working set's peak so far, the seconds since
    the start and those at which it last rose, whether the job books less now: once it answers
    with a lower booking, that is the one a sample passes; it is asked again, as it may
    lower it once more."""
    started = time.monotonic()
    deadline = started + timeout if timeout is not None else None
    # select.poll, not the selectors module: a few descriptors, and one import less per run.
    poller = select.poll()
    pidfd = os.pidfd_open(proc.pid)
    kinds = {pidfd: EXITED, signals.read_fd: SIGNALLED, **dict.fromkeys(cage.wake_fds(), OOM)}
    for fd in kinds:
        poller.register(fd, select.POLLIN)
    # A cgroup file always reads as ready; only its priority data says that a count changed.
    for fd in cage.priority_fds():
        kinds[fd] = OOM
        poller.register(fd, select.POLLPRI)
    peak = level = 0
    rose_at = 0.0
    ended_by = EXITED
    try:
        while True:
            reading = cage.reading()
            if reading is not None:
                peak = max(peak, reading.working_set)
                elapsed = time.monotonic() - started
                if peak * 100 > level * (100 + LEAST_MARGIN_PERCENT):
                    level, rose_at = peak, elapsed
                if outgrown is not None and outgrew_booking(reading.working_set, outgrown[0]):
                    outgrown[1]()
                    outgrown = None
                lighter = lighten(peak, elapsed, rose_at) if lighten is not None else None
                if lighter is not None and outgrown is not None:
                    outgrown = (lighter, outgrown[1])
            pause = interval
            if deadline is not None:
                pause = max(0.0, min(pause, deadline - time.monotonic()))
            tags = {kinds[fd] for fd, _ in poller.poll(whole_milliseconds(pause))}
            if OOM in tags:
                cage.drain()
            # Read every round, not only on a notification: the kill can land just after it.
            if cage.lost_process():
                ended_by = OOM
                break
            if SIGNALLED in tags and signals.pending() is not None:
                ended_by = SIGNALLED
                break
            if EXITED in tags:
                break
            if deadline is not None and time.monotonic() >= deadline:
                ended_by = TIMEOUT
                break
    finally:
        os.close(pidfd)
    stop_tree(
        job,
        supervised={job},
        grace=grace if ended_by != EXITED else LEFTOVER_GRACE,
        members=cage.members,
        cgroup=cage.path,
    )
    returncode = proc.wait()
    if ended_by == EXITED and (
        cage.lost_process() or (returncode == -signal.SIGKILL and cage.oom_before_removal())
    ):
        ended_by = OOM
    return Watched(
        returncode=returncode,
        ended_by=ended_by,
        signum=signals.received if ended_by == SIGNALLED else None,
        working_set_peak=peak,
        duration=time.monotonic() - started,
        peak_at=rose_at,
    )
