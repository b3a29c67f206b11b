"""`swarmdeck run --detach`: a runner that outlives the terminal that launched it.

The launcher starts the runner again as a fresh process in its own session, with a pipe on
which the new runner says "admitted" once its job is admitted and started; until then its
lines (queued, or why the command could not start) still reach the terminal, and a job that
could not start ends the launcher with the exit code a foreground run gives. Afterwards the
job's output goes to a file in the state folder and its exit code to the ledger. A fresh
process rather than a fork, because a forked child must never touch SQLite state it inherited
from its parent.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from swarmdeck import paths
from swarmdeck.actions.run_request import RunRequest
from swarmdeck.errors import StateError
from swarmdeck.exitcodes import ExitCode

if TYPE_CHECKING:
    from typing import IO

OUTPUT_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_APPEND | os.O_CLOEXEC
"""A job's output is a new file: never an existing one, never through a link."""
DETACH_FD_ENV = "SWARMDECK_DETACH_FD"
"""Set only in a detached runner: the pipe on which it tells its launcher it was admitted."""


@dataclass
class JobOutput:
    """A detached job's output file, open, and the standard streams its process starts with."""

    path: Path
    fd: int
    null: int
    """/dev/null, open for reading: the job's standard input."""
    handed_over: bool = False
    """Whether the runner's own streams went to the file (the launcher was told)."""

    @property
    def streams(self) -> tuple[int, int, int]:
        """Standard input, output and error for the job's process."""
        return self.null, self.fd, self.fd

    def close(self) -> None:
        os.close(self.fd)
        os.close(self.null)

    def discard(self) -> None:
        """For a job that never started: close, and remove the file nothing was written to."""
        self.close()
        with contextlib.suppress(OSError):
            # Only ever an empty file of this job's; one left behind misleads no one.
            self.path.unlink()


class Detached:
    """The detached runner's line back to the terminal that launched it."""

    def __init__(self, write_fd: int) -> None:
        self.write_fd = write_fd

    def output(self, job_id: int) -> JobOutput:
        """The admitted job's output file, opened before its process starts.

        The file is new and private: created exclusively, never through a link (a file or link
        planted in its place is refused, StateError, before the job starts).
        """
        path = Path(paths.private_state_dir()) / "jobs" / f"job-{job_id}.out"
        fd = open_job_output(path)
        return JobOutput(path, fd, os.open(os.devnull, os.O_RDONLY))

    def started(self, job_id: int, output: JobOutput) -> None:
        """Tell the launcher the job runs, then let go of its terminal: the runner's own lines
        go to the job's output file from now on."""
        # A launcher gone (killed while it waited) is no reason to stop: the job runs on,
        # detached as asked.
        with contextlib.suppress(BrokenPipeError):
            os.write(self.write_fd, f"admitted {job_id} {output.path}\n".encode())
        os.close(self.write_fd)
        sys.stdout.flush()
        sys.stderr.flush()
        for target, fd in enumerate(output.streams):
            os.dup2(fd, target)
        output.close()
        output.handed_over = True

    def admitted(self, job_id: int) -> str:
        """For a runner whose job is started elsewhere: open its output file, tell the launcher,
        and let go of the terminal at once; the file's path."""
        output = self.output(job_id)
        self.started(job_id, output)
        return str(output.path)


def open_job_output(output: Path) -> int:
    """A descriptor on a new job output file (0600); StateError, one line, when it cannot be."""
    try:
        output.parent.mkdir(mode=0o700, exist_ok=True)
        return os.open(output, OUTPUT_FLAGS, 0o600)
    except FileExistsError:
        problem = "a file or link is already there (planted?); move it aside"
    except OSError as error:
        problem = error.strerror or str(error)
    raise StateError(f"job output {output} cannot be created: {problem}; the job did not start")


def detached_channel() -> Detached | None:
    """In a runner started by `launch_detached`: the line back to its launcher."""
    fd = os.environ.pop(DETACH_FD_ENV, None)
    return Detached(int(fd)) if fd and fd.isdigit() else None


def relaunch_argv(request: RunRequest) -> list[str]:
    """The `swarmdeck run` line that repeats the request in a new process."""
    args = [sys.executable, "-m", "swarmdeck.cli", "run", "--detach"]
    for flag, value in (
        ("--cap", request.cap), ("--label", request.label), ("--threads", request.threads),
        ("--wait", request.wait), ("--timeout", request.timeout),
    ):
        if value is not None:
            args += [flag, str(value)]
    if request.unbounded:
        args.append("--unbounded")
    return [*args, "--", *request.argv]


def launch_detached(request: RunRequest) -> int:
    """Start the runner again in its own session; wait only until its job is admitted and
    started (or could not start)."""
    return launch_and_wait_admitted(relaunch_argv(request), request.cwd, "")


@dataclass(frozen=True)
class Started:
    """How a detached launch without a terminal went: the runner's exit status (0 once its
    job was admitted) and, when it ended without, the last line it said (why)."""

    code: int
    said: str = ""


def launch_detached_said(request: RunRequest) -> Started:
    """`launch_detached` for a caller without a terminal (the app): the runner's lines until
    it is admitted go to a private temporary file, not to the caller's screen, and when it
    ends without being admitted its last line is the reason to show."""
    import tempfile

    with tempfile.TemporaryFile() as lines:
        code = launch_and_wait_admitted(relaunch_argv(request), request.cwd, "", lines)
        if code == ExitCode.OK:
            return Started(code)
        lines.seek(0)
        said = [line for line in lines.read().decode(errors="replace").splitlines() if line]
    return Started(code, said[-1].removeprefix("swarmdeck: ").strip() if said else "")


def launch_and_wait_admitted(
    argv: list[str], cwd: Path | str, where: str, lines: IO[bytes] | None = None
) -> int:
    """Start `argv` in its own session with the detach channel, and return once it says its
    job was admitted and started (printing the job and its output file, `where` after "runs
    detached"), or with its exit status when it ended without. Its output until then goes to
    `lines` when given, else to this process's own."""
    read_fd, write_fd = os.pipe()
    env = dict(os.environ, **{DETACH_FD_ENV: str(write_fd)})
    child = subprocess.Popen(
        argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, pass_fds=(write_fd,),
        start_new_session=True, stdout=lines, stderr=lines,
    )
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as pipe:
        line = pipe.readline().decode().split()
    if line and line[0] == "admitted":
        print(f"job {line[1]} runs detached{where}; output in {line[2]}", flush=True)
        return int(ExitCode.OK)
    return child.wait()
