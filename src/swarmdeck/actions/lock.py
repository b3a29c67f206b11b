"""Take, queue for and give back a workspace lock: the write side of probes.locks.

A lock file appears whole or not at all (written aside, then hard-linked into place, which
fails if one exists). Every decision to take, take over or remove a lock happens under a short
flock on a guard file beside it, so two callers that find the same stale lock cannot both take
it; a guard held longer than one decision reads as "busy", never as a hang. The lock folder is
private to its user and its files are 0600; a full disk leaves no file behind. A lock is keyed
by its path resolved: the path need not exist yet, but its folder must (else refused, 251).
Who holds a lock is decided here too (`lock_holder`, `session_name`, `holder_command`).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from swarmdeck import paths
from swarmdeck.breaks import broken
from swarmdeck.errors import RefusedError, StateError, SwarmdeckError, UsageError
from swarmdeck.exitcodes import ExitCode
from swarmdeck.file_lock import take_within
from swarmdeck.probes import locks
from swarmdeck.probes.locks import FREE, HELD, LockHolder, LockState
from swarmdeck.probes.procs import ProcessIdentity, command_line, identity, lasting_ancestor

SESSION_ENV = "SWARMDECK_SESSION"
GUARD_WAIT = 5.0
"""Seconds to wait for a guard another caller holds: one decision takes milliseconds."""
GUARD_BRIEF = 0.25
"""The guard wait of `--no-wait`: long enough for another caller's decision, no longer."""
GUARD_POLL = 0.01


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


class GuardBusy(Exception):
    """Another process held the lock's guard past the wait: the decision could not be made."""


def lock_holder(pid: int | None) -> ProcessIdentity:
    """The process that holds a lock: `pid` when given, else the nearest caller that outlives
    this command (past per-command shells and wrappers)."""
    holder = lasting_ancestor(os.getpid()) if pid is None else identity(pid)
    if holder is None:
        who = "of the caller" if pid is None else pid
        raise UsageError(f"no process {who} to hold the lock; name one with --pid")
    return holder


def caller_pid() -> int:
    """The process a default session is named after: the caller that outlives this command."""
    caller = lasting_ancestor(os.getpid())
    return caller.pid if caller else os.getppid()


def session_name(explicit: str | None, pid: int) -> str:
    """The session a lock is held for: given, else $SWARMDECK_SESSION, else `pid-PID`."""
    return explicit or os.environ.get(SESSION_ENV) or f"pid-{pid}"


def holder_command(pid: int) -> str:
    """The holder's command line, the lock's label ("" when it cannot be read: the lock works
    without it)."""
    return command_line(pid)


def check_lock_folders() -> None:
    """StateError when the state folder, or the locks folder in it, exists but may not hold
    state (a file, another user's, open to others' writes): `lock show` refuses it as every
    command that writes there does, rather than read what is there as stale locks. A missing
    one holds no locks, and reading makes none."""
    for folder in (paths.state_dir(), str(locks.locks_dir())):
        if not os.path.lexists(folder):
            return
        refusal = paths.state_dir_refusal(folder)
        if refusal is not None:
            raise StateError(refusal)


def _lock_folder(lock_file: Path) -> None:
    """The lock folder, private; in the state folder (the usual place), that one checked too."""
    if lock_file.parent == locks.locks_dir():
        Path(paths.private_state_dir())
    paths.private_dir(str(lock_file.parent))


@contextmanager
def _guard(lock_file: Path, wait: float = GUARD_WAIT) -> Iterator[None]:
    """Exclusive for the few milliseconds of one decision; the kernel drops it if we die.

    GuardBusy when another process holds it past `wait` seconds.
    """
    _lock_folder(lock_file)
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(lock_file.with_suffix(".guard"), flags, 0o600)
    except OSError as error:
        guard = lock_file.with_suffix(".guard")
        raise StateError(f"{guard}: cannot open it ({error.strerror})") from None
    try:
        if not take_within(fd, wait, first=GUARD_POLL, most=GUARD_POLL):
            raise GuardBusy(str(lock_file.with_suffix(".guard")))
        yield
    finally:
        os.close(fd)


def _aside(lock_file: Path, holder: LockHolder) -> Path:
    """The record written beside the lock file; nothing is left of it when it cannot be."""
    tmp = lock_file.with_name(f".{lock_file.name}.{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(tmp, flags, 0o600)
        try:
            data = (holder.to_text() + "\n").encode()
            if os.write(fd, data) != len(data):
                raise OSError(28, os.strerror(28))
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as error:
        tmp.unlink(missing_ok=True)
        raise StateError(
            f"{lock_file.parent}: cannot write a lock file ({error.strerror}); nothing was taken"
        ) from None
    return tmp


def _try_take(
    lock_file: Path, new: LockHolder, say: Callable[[str], None], guard_wait: float
) -> Acquired | LockState:
    """Take the lock if it is free or stale; otherwise the live holder's state."""
    with _guard(lock_file, guard_wait):
        state = locks.read_lock_file(lock_file)
        if state.state == HELD and not broken("no-lock-takeover-check"):
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
    say so. A path whose folder does not exist is refused (251).
    """
    resolved = str(Path(path).resolve())
    folder = os.path.dirname(resolved)
    if not os.path.isdir(folder):
        raise UsageError(
            f"cannot lock {resolved}: its folder {folder} does not exist"
            " (a lock is on a workspace path: check the path)"
        )
    if not session:
        raise UsageError("a lock needs a session name (--session or $SWARMDECK_SESSION)")
    if not holder.is_alive():
        raise UsageError(f"process {holder.pid} cannot hold a lock: it is not running")
    lock_file = locks.lock_file_for(resolved, directory)
    new = LockHolder(resolved, holder.pid, holder.start_ticks, session, command, time.time())
    started = time.monotonic()
    last_said: float | None = None
    guard_wait = GUARD_WAIT if wait else GUARD_BRIEF
    while True:
        try:
            outcome = _try_take(lock_file, new, say, guard_wait)
        except GuardBusy as busy:
            outcome = busy
        now = time.monotonic()
        if isinstance(outcome, Acquired):
            return Acquired(
                outcome.lock_file,
                outcome.holder,
                outcome.took_over,
                outcome.already_held,
                waited=now - started,
            )
        if isinstance(outcome, GuardBusy):
            message = f"{resolved}: its guard {outcome} is held by another process"
        elif outcome.state != HELD or outcome.holder is None:
            continue  # the file changed under the decision; take the next one at once
        else:
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
    try:
        with _guard(lock_file):
            return _release(lock_file, path, session)
    except GuardBusy as busy:
        raise LockBusy(
            f"{Path(path).resolve()}: its guard {busy} is held by another process; try again"
        ) from None


def _release(lock_file: Path, path: Path | str, session: str) -> LockState:
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
    try:
        with _guard(lock_file):
            state = locks.read_lock_file(lock_file)
            if state.state == HELD:
                assert state.holder is not None
                raise RefusedError(f"{state.holder.path}: {state.holder.describe()}; not stale")
            if state.state != FREE:
                lock_file.unlink(missing_ok=True)
            return state
    except GuardBusy as busy:
        raise LockBusy(
            f"{lock_file}: its guard {busy} is held by another process; try again"
        ) from None
