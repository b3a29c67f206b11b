"""The GPU quiesce wrapper behind `swarmdeck gpu-run -- CMD`: free the cards, run, judge the run.

A GPU job that starts while an inference server holds the card's memory dies minutes later
with an allocation error that looks like the job's own bug. So before the command runs, the
wrapper registers itself, stops the configured (allowlisted) services unless another live
wrapper already did, reads back that they left the cards, and refuses (exit 78, naming it)
when a process it does not know holds a card: it never kills one. It never restarts the
services afterwards; a person does. If the driver logged NV_ERR_NO_MEMORY while the command
ran, the run ends with 245 so the caller knows the GPU, not the code, ran out.
"""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from swarmdeck.errors import RefusedError, UsageError
from swarmdeck.exitcodes import ExitCode
from swarmdeck.probes import kernel
from swarmdeck.probes.gpu import GpuProcess, GpuSnapshot, QuiesceHolder, gpu_snapshot, quiesce_dir
from swarmdeck.probes.nvml import READY, Nvml
from swarmdeck.probes.procs import ProcessIdentity, own_identity

Say = Callable[[str], None]


def _say_on_stderr(line: str) -> None:
    print(f"swarmdeck gpu-run: {line}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class GpuRunSettings:
    """How one gpu-run behaves; the allowlist and stop commands come from config [gpu]."""

    allowlist: Sequence[str] = ()
    stop_commands: Sequence[str] = ()
    wait: bool = False
    wait_timeout: float | None = None
    poll: float = 2.0
    say_every: float = 60.0
    stop_timeout: float = 30.0


def describe(card: int, process: GpuProcess) -> str:
    """Who holds a card, for the refusal line: pid, user, name, command and memory."""
    memory = process.used_memory
    held = f"{memory / 2**20:.0f} MiB" if isinstance(memory, int) else f"memory {memory}"
    return (
        f"GPU {card} is used by pid {process.pid} (user {process.user}, {process.name}:"
        f" {process.command or '?'}, {held}), which is not on the allowlist"
    )


def foreign_processes(snapshot: GpuSnapshot) -> list[tuple[int, GpuProcess]]:
    """Compute processes neither allowlisted nor started under a live gpu-run."""
    return [(c.index, p) for c in snapshot.cards for p in c.process_list if p.foreign]


def unreadable_cards(snapshot: GpuSnapshot) -> list[str]:
    """Cards whose compute processes NVML would not list: nobody can say they are free."""
    return [
        f"GPU {c.index}: cannot tell who uses it (processes {c.processes})"
        for c in snapshot.cards
        if not isinstance(c.processes, list)
    ]


def allowlisted_processes(snapshot: GpuSnapshot) -> list[tuple[int, GpuProcess]]:
    return [
        (c.index, p)
        for c in snapshot.cards
        for p in c.process_list
        if p.allowlisted and p.holder is None
    ]


@contextmanager
def _one_at_a_time(folder: Path) -> Iterator[None]:
    """Serialises the register-and-stop phase of concurrent wrappers (the kernel frees it if
    this process dies), so two starting at once neither both skip nor both half-run it."""
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder / ".guard", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def register(folder: Path, me: ProcessIdentity, command: str) -> Path:
    """Write this wrapper's registration (pid, start ticks, command, since) atomically."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{me.pid}-{me.start_ticks}.json"
    tmp = folder / f".{path.name}.tmp"
    holder = QuiesceHolder(me.pid, me.start_ticks, command, time.time(), True)
    tmp.write_text(holder.to_text() + "\n")
    os.replace(tmp, path)
    return path


def _forget_stale(folder: Path, holders: list[QuiesceHolder]) -> None:
    for holder in holders:
        if not holder.alive:
            (folder / f"{holder.pid}-{holder.start_ticks}.json").unlink(missing_ok=True)


def _stop_services(commands: Sequence[str], say: Say) -> None:
    for command in commands:
        say(f"stopping: {command}")
        result = subprocess.run(command, shell=True, check=False, stdin=subprocess.DEVNULL)
        if result.returncode != 0:
            say(f"stop command exited {result.returncode}: {command}")


def _wait_for_cards(
    snapshot: Callable[[], GpuSnapshot], settings: GpuRunSettings, say: Say
) -> GpuSnapshot:
    """The cards once no foreign process holds one; refuse (78) or wait, per settings."""
    started = time.monotonic()
    last_said: float | None = None
    while True:
        current = snapshot()
        if current.state != READY:
            raise RefusedError(f"gpu-run: {current.summary()}; nothing ran")
        blockers = [describe(card, process) for card, process in foreign_processes(current)]
        blockers += unreadable_cards(current)
        if not blockers:
            return current
        lines = "; ".join(blockers)
        if not settings.wait:
            raise RefusedError(f"gpu-run: {lines}; nothing ran (it is never killed)")
        waited = time.monotonic() - started
        if settings.wait_timeout is not None and waited >= settings.wait_timeout:
            raise RefusedError(f"gpu-run: {lines}; waited {waited:.0f} s, nothing ran")
        if last_said is None or time.monotonic() - last_said >= settings.say_every:
            say(f"{lines}; waiting")
            last_said = time.monotonic()
        time.sleep(settings.poll)


def _read_back_stopped(
    snapshot: Callable[[], GpuSnapshot], settings: GpuRunSettings
) -> GpuSnapshot:
    """Poll until no allowlisted service is left on a card; refuse (78) past stop_timeout."""
    deadline = time.monotonic() + settings.stop_timeout
    while True:
        current = snapshot()
        left = allowlisted_processes(current)
        unread = unreadable_cards(current)
        if not left and not unread:
            return current
        if time.monotonic() >= deadline:
            if not left:
                raise RefusedError(
                    f"gpu-run: the stop commands ran but {'; '.join(unread)}; nothing ran"
                )
            names = ", ".join(f"pid {p.pid} ({p.name}) on GPU {card}" for card, p in left)
            raise RefusedError(
                f"gpu-run: the stop commands ran but {names} still holds the card; nothing ran"
            )
        time.sleep(min(settings.poll, 0.2))


def _exit_status(returncode: int) -> int:
    return 128 - returncode if returncode < 0 else returncode


def _run(argv: Sequence[str]) -> int:
    """Run the command in the foreground; TERM and HUP sent to the wrapper reach it too."""
    try:
        child = subprocess.Popen(list(argv))
    except OSError as error:
        raise UsageError(f"gpu-run: cannot start {argv[0]}: {error.strerror}") from error
    if threading.current_thread() is not threading.main_thread():
        return _exit_status(child.wait())

    def forward(signum: int, _frame: object) -> None:
        child.send_signal(signum)

    # INT comes from the terminal to the whole foreground group, the child included.
    handlers = {
        signum: signal.SIG_IGN if signum == signal.SIGINT else forward
        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    }
    previous = {signum: signal.signal(signum, handler) for signum, handler in handlers.items()}
    try:
        return _exit_status(child.wait())
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def gpu_run(
    argv: Sequence[str],
    settings: GpuRunSettings,
    *,
    nvml: Nvml | None = None,
    folder: Path | None = None,
    kmsg: Path = kernel.KMSG,
    dmesg: Sequence[str] = kernel.DMESG,
    say: Say = _say_on_stderr,
) -> int:
    """Quiesce the cards, run `argv`, and give its exit status (245 on GPU out-of-memory).

    Refusals (foreign process, no GPU, services that would not stop) raise RefusedError
    (exit 78) before anything runs. Waiting for a foreign process happens before this wrapper
    registers, so a waiting wrapper never looks to others as if it held the cards quiesced.
    """
    if not argv:
        raise UsageError(
            "gpu-run: no command given: put it after --, like: swarmdeck gpu-run -- python train.py"
        )
    folder = folder or quiesce_dir()
    me = own_identity()

    def snapshot() -> GpuSnapshot:
        return gpu_snapshot(settings.allowlist, nvml=nvml, quiesce=folder)

    _wait_for_cards(snapshot, settings, say)
    registration: Path | None = None
    try:
        with _one_at_a_time(folder):
            registration = register(folder, me, " ".join(argv))
            current = _wait_for_cards(snapshot, settings, say)
            _forget_stale(folder, current.holders)
            others = [h for h in current.live_holders if h.pid != me.pid]
            if others:
                pids = ", ".join(str(h.pid) for h in others)
                say(f"cards already quiesced by gpu-run {pids}; services not stopped again")
            elif settings.stop_commands:
                _stop_services(settings.stop_commands, say)
                _read_back_stopped(snapshot, settings)
        mark = kernel.last_seq(kmsg)
        started = time.time()
        status = _run(argv)
        ended = time.time()
    finally:
        if registration is not None:
            registration.unlink(missing_ok=True)
    return _judge_run(status, mark, started, ended, kmsg, dmesg, say)


def _judge_run(
    status: int,
    mark: int | None,
    started: float,
    ended: float,
    kmsg: Path,
    dmesg: Sequence[str],
    say: Say,
) -> int:
    """245 when the driver logged NV_ERR_NO_MEMORY during the run, else the command's status."""
    if mark is not None:
        log = kernel.kernel_log(after_seq=mark, kmsg=kmsg, dmesg=dmesg)
    else:
        log = kernel.kernel_log(since=started, until=ended + 1.0, kmsg=kmsg, dmesg=dmesg)
    if not log.read:
        say(f"kernel log not read ({log.reason}); cannot tell whether the GPU ran out of memory")
        return status
    if log.gpu_out_of_memory:
        say(f"the GPU ran out of memory during the run: {log.gpu_out_of_memory[0].text}")
        return ExitCode.GPU_OUT_OF_MEMORY
    return status
