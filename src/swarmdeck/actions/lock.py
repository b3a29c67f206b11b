"""Take, queue for and give back a workspace lock: the write side of probes.locks.

A lock file appears whole or not at all (written aside, then hard-linked into place, which
fails if one exists), so a reader never sees half a record. Every decision to take a lock,
take over a stale one or remove one happens under a short flock on a guard file beside it,
so two callers that both find the same stale lock cannot both take it.
"""

from __future__ import annotations

import fcntl
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from swarmdeck.errors import RefusedError, SwarmdeckError, UsageError
from swarmdeck.exitcodes import ExitCode
from swarmdeck.probes import locks
from swarmdeck.probes.locks import FREE, HELD, LockHolder, LockState
from swarmdeck.probes.procs import ProcessIdentity


class LockBusy(RefusedError):
    """The lock is held by a live process and the caller chose not to wait: exit 78."""


class LockWaitTimedOut(SwarmdeckError):
    """Waited for a lock past the caller's limit: exit 253."""

    exit_code = ExitCode.TIMED_OUT


@dataclass(frozen=True)
class Acquired:
    """A lock now held by the caller; `took_over` is the stale state it replaced, if any."""

    lock_file: Path
    holder: LockHolder
    took_over: LockState | None = None
    already_held: bool = False
    waited: float = 0.0


def _say_on_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


@contextmanager
def _guard(lock_file: Path) -> Iterator[None]:
    """Exclusive for the few milliseconds of one decision; the kernel drops it if we die."""
    lock_file.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock_file.with_suffix(".guard"), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _aside(lock_file: Path, holder: LockHolder) -> Path:
    tmp = lock_file.with_name(f".{lock_file.name}.{os.getpid()}.tmp")
    tmp.write_text(holder.to_text() + "\n")
    return tmp


def _try_take(lock_file: Path, new: LockHolder, say: Callable[[str], None]) -> Acquired | LockState:
    """Take the lock if it is free or stale; otherwise the live holder's state."""
    with _guard(lock_file):
        state = locks.read_lock_file(lock_file)
        if state.state == HELD:
            held = state.holder
            assert held is not None
            if held.session == new.session and held.identity == new.identity:
                return Acquired(lock_file, held, already_held=True)
            return state
        tmp = _aside(lock_file, new)
        try:
            if state.state == FREE:
                try:
                    os.link(tmp, lock_file)
                except FileExistsError:
                    # Written by something that does not take the guard (an older swarmdeck,
                    # a hand): decide again on what is there now.
                    return locks.read_lock_file(lock_file)
                return Acquired(lock_file, new)
            say(f"{new.path}: taking over a stale lock: {state.reason}")
            os.replace(tmp, lock_file)
            return Acquired(lock_file, new, took_over=state)
        finally:
            tmp.unlink(missing_ok=True)


def acquire(
    path: Path | str,
    *,
    session: str,
    command: str,
    holder: ProcessIdentity,
    wait: bool = True,
    timeout: float | None = None,
    poll: float = 1.0,
    say_every: float = 60.0,
    say: Callable[[str], None] = _say_on_stderr,
    directory: Path | None = None,
) -> Acquired:
    """Hold the workspace lock of `path` for the process `holder`, on behalf of `session`.

    Free: take it. Held by a live process: queue, saying "held by session S, process P" every
    `say_every` seconds (or refuse with exit 78 when `wait` is false; exit 253 past
    `timeout`). Stale (holder gone, its pid reused, or the file garbage): take it over and
    say so.
    """
    if not session:
        raise UsageError("a lock needs a session name (--session or $SWARMDECK_SESSION)")
    if not holder.is_alive():
        raise UsageError(f"process {holder.pid} cannot hold a lock: it is not running")
    resolved = str(Path(path).resolve())
    lock_file = locks.lock_file_for(resolved, directory)
    new = LockHolder(resolved, holder.pid, holder.start_ticks, session, command, time.time())
    started = time.monotonic()
    last_said: float | None = None
    while True:
        outcome = _try_take(lock_file, new, say)
        now = time.monotonic()
        if isinstance(outcome, Acquired):
            return Acquired(
                outcome.lock_file,
                outcome.holder,
                outcome.took_over,
                outcome.already_held,
                waited=now - started,
            )
        if outcome.state != HELD or outcome.holder is None:
            continue  # the file changed under the decision; take the next one at once
        message = f"{resolved}: {outcome.holder.describe()}"
        if not wait:
            raise LockBusy(message)
        if timeout is not None and now - started >= timeout:
            raise LockWaitTimedOut(f"{message}; gave up after {timeout:g} s")
        if last_said is None or now - last_said >= say_every:
            say(f"{message}; waiting")
            last_said = now
        remaining = poll if timeout is None else min(poll, timeout - (now - started))
        time.sleep(max(remaining, 0.0))


def release(path: Path | str, *, session: str, directory: Path | None = None) -> LockState:
    """Give back the lock of `path`; what it was before. Another live session's lock is refused.

    A stale lock may be cleared by anyone; a free one is left as it is.
    """
    lock_file = locks.lock_file_for(path, directory)
    with _guard(lock_file):
        state = locks.read_lock_file(lock_file)
        if state.state == FREE:
            return state
        if state.state == HELD:
            assert state.holder is not None
            if state.holder.session != session:
                raise RefusedError(
                    f"{Path(path).resolve()}: {state.holder.describe()}; not session {session}'s"
                )
        lock_file.unlink(missing_ok=True)
        return state


def release_stale(lock_file: Path) -> LockState:
    """Clear a stale lock by its file (what the control room's Locks panel shows); what it was.

    A lock whose holder is alive is refused whoever asks: only its own session releases it.
    """
    with _guard(lock_file):
        state = locks.read_lock_file(lock_file)
        if state.state == HELD:
            assert state.holder is not None
            raise RefusedError(f"{state.holder.path}: {state.holder.describe()}; not stale")
        if state.state != FREE:
            lock_file.unlink(missing_ok=True)
        return state
