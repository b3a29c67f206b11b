"""Starting a job: fork, run its set-up in the child, exec, and know at once whether exec failed.

`subprocess.Popen` does all this and more, but importing subprocess (and locale, which it pulls)
is a noticeable share of every caged run's start, and the runner starts processes one way only:
its own standard streams (or three it names), a folder, an environment and a set-up step
between fork and exec (joining the cage). The child does what Popen's does for that case, and
one thing more: the stop signals the runner catches (INT, TERM, HUP) act on the child as on the
job from the fork on, so one sent into the cage while it is being joined is not lost. A failure
before the exec comes back through a pipe that the exec closes, so the parent knows before
`spawn` returns.
"""

from __future__ import annotations

import os
import signal
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
"""The signals a runner (and a peer run's driver) catches to stop its job; in the child they act
as they would in the job."""

_FAILED_SETUP = 255
"""The child's exit status when its set-up or exec failed (it never ran the command)."""


class SetupFailed(Exception):
    """The set-up step raised in the child: nothing was run. The message names the error."""


class CannotEnter(OSError):
    """The child could not change into the job's folder (named as the filename): nothing was
    run. A class of its own because the folder and the command may be the same path (`cd /tmp
    && swarmdeck run -- /tmp`), so the filename alone cannot tell whose fault it was."""


class Child:
    """A started process: its pid, and once waited for, its status as Popen gives it (the exit
    code, or minus the signal that ended it)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None

    def wait(self) -> int:
        """Wait for the process to end (once; later calls give the same status)."""
        if self.returncode is None:
            _, status = os.waitpid(self.pid, 0)
            self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode


def spawn(
    argv: Sequence[str],
    cwd: str,
    env: Mapping[str, str],
    setup: Callable[[], None],
    streams: tuple[int, int, int] | None = None,
) -> Child:
    """Start `argv` in `cwd` with `env`, after `setup` ran in the child; with `streams`, those
    descriptors are its standard input, output and error instead of the caller's. The child
    runs the set-up, puts back the default action of the signals Python ignores (SIGPIPE,
    SIGXFSZ), takes the streams it was given as its standard three, closes every other
    descriptor, and execs.

    Raises what exec raised (FileNotFoundError, PermissionError, …, naming the program),
    CannotEnter (naming the folder), or SetupFailed; the child is then already reaped. A fork that
    fails raises its OSError and leaves no descriptor open.
    """
    report_read, report_write = os.pipe()
    # Held until the child has put the stop signals back at their default: a TERM meant for
    # the job must not reach the parent's handler in the child, nor one that raises (INT's
    # default) take the child back into the parent's code.
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        pid = os.fork()
        if pid == 0:
            _child(argv, cwd, env, setup, streams, report_write, mask)
    except OSError:
        os.close(report_read)
        raise
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        os.close(report_write)
    try:
        report = b""
        while chunk := os.read(report_read, 4096):
            report += chunk
    finally:
        os.close(report_read)
    if not report:
        return Child(pid)
    os.waitpid(pid, 0)
    kind, _, detail = report.partition(b" ")
    if kind == b"setup":
        raise SetupFailed(detail.decode(errors="replace"))
    number = int(detail)
    if kind == b"chdir":
        raise CannotEnter(number, os.strerror(number), cwd)
    raise OSError(number, os.strerror(number), argv[0])


def _exec_on_path(argv: list[str], env: dict[str, str]) -> None:
    """Exec `argv` as os.execvpe does, looking its program up on the job's own PATH, without
    os.get_exec_path: that imports warnings, in the child between fork and exec.

    Raises the error of the first folder that had the program but could not run it, else the
    last folder's (FileNotFoundError when it is on none).
    """
    program = argv[0]
    if os.path.dirname(program):
        os.execve(program, argv, env)
    first: OSError | None = None
    last: OSError = FileNotFoundError(2, os.strerror(2), program)
    for folder in env.get("PATH", os.defpath).split(os.pathsep):
        try:
            os.execve(os.path.join(folder, program), argv, env)
        except (FileNotFoundError, NotADirectoryError) as error:
            last = error
        except OSError as error:
            last = error
            first = first or error
    raise first or last


def _child(
    argv: Sequence[str], cwd: str, env: Mapping[str, str], setup: Callable[[], None],
    streams: tuple[int, int, int] | None, report: int, mask: set[int],
) -> None:
    """In the forked child: never returns."""
    try:
        signal.set_wakeup_fd(-1)
        for signum in STOP_SIGNALS:
            if signal.getsignal(signum) != signal.SIG_IGN:
                signal.signal(signum, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        step = b"chdir"
        try:
            os.chdir(cwd)
            step = b"setup"
            setup()
            step = b"exec"
            for signum in (signal.SIGPIPE, signal.SIGXFSZ):
                signal.signal(signum, signal.SIG_DFL)
            for target, fd in enumerate(streams or ()):
                os.dup2(fd, target)
            os.closerange(3, report)
            os.closerange(report + 1, os.sysconf("SC_OPEN_MAX"))
            _exec_on_path(list(argv), dict(env))
        except OSError as error:
            if step == b"setup":
                raise
            os.write(report, step + b" " + str(error.errno or 0).encode())
    except BaseException as error:
        # Whatever the set-up raised is reported to the parent, which refuses the run with it.
        os.write(report, b"setup " + f"{type(error).__name__}: {error}".encode(errors="replace"))
    finally:
        os._exit(_FAILED_SETUP)
