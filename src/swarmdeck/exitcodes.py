"""The exit codes swarmdeck itself uses, high enough not to collide with a command's own."""

from enum import IntEnum


class ExitCode(IntEnum):
    """Every code swarmdeck may exit with, besides the wrapped command's own status: the one
    home of these numbers."""

    OK = 0
    REFUSED = 78
    CANNOT_EXECUTE = 126
    """The command was found but cannot be run, as a shell says it."""
    NOT_FOUND = 127
    """The command was not found, as a shell says it."""
    TERMINAL_GONE = 129
    """The control room's terminal went away (a killed tmux session, a dropped ssh, SIGHUP):
    128 + SIGHUP, as a shell shows a command that its hang-up ended."""
    READER_GONE = 141
    """The reader of swarmdeck's output went away (`| head`): 128 + SIGPIPE, as a shell shows a
    command that SIGPIPE ended (`git log | head -1`)."""
    NEVER_FITS_ANY_HOST = 241
    MOVED = 242
    """Withdrawn while queued here because it moved to another host and runs there (its row
    here says where, and its job id there); nothing ran here."""
    LONG_JOB_SINGLE_HOST = 244
    GPU_OUT_OF_MEMORY = 245
    OWN_CAP = 250
    USAGE = 251
    NOT_ADMITTED = 252
    TIMED_OUT = 253
    SLICE_FULL = 254
    LOST = 255
    """The job's runner vanished (SIGKILL, a crash) before it could record how the job ended."""


MEANING: dict[ExitCode, str] = {
    ExitCode.REFUSED: "refused before running (nothing ran)",
    ExitCode.CANNOT_EXECUTE: "the command cannot be run",
    ExitCode.NOT_FOUND: "the command was not found",
    ExitCode.TERMINAL_GONE: "the control room's terminal went away",
    ExitCode.READER_GONE: "the reader of the output went away",
    ExitCode.NEVER_FITS_ANY_HOST: "no host can ever fit it",
    ExitCode.MOVED: "moved to another host while queued (it runs there)",
    ExitCode.LONG_JOB_SINGLE_HOST: "a job over 2h would occupy a single host",
    ExitCode.GPU_OUT_OF_MEMORY: "not enough GPU memory",
    ExitCode.OWN_CAP: "hit its own cap",
    ExitCode.USAGE: "usage or no cage",
    ExitCode.NOT_ADMITTED: "not admitted",
    ExitCode.TIMED_OUT: "timed out",
    ExitCode.SLICE_FULL: "the shared slice was full (rerun)",
    ExitCode.LOST: "the job's runner vanished (in the ledger)",
}
"""Each code but 0 in a few words, for the help of the commands that exit with it (README.md's
tables say more)."""


RUN_CODES: tuple[ExitCode, ...] = (
    ExitCode.REFUSED, ExitCode.CANNOT_EXECUTE, ExitCode.NOT_FOUND, ExitCode.MOVED,
    ExitCode.GPU_OUT_OF_MEMORY, ExitCode.OWN_CAP, ExitCode.USAGE, ExitCode.NOT_ADMITTED,
    ExitCode.TIMED_OUT, ExitCode.SLICE_FULL,
)
"""The codes `swarmdeck run` itself exits with, besides the command's own status."""

DISPATCH_CODES: tuple[ExitCode, ...] = (ExitCode.NEVER_FITS_ANY_HOST, ExitCode.LONG_JOB_SINGLE_HOST)
"""The codes `swarmdeck dispatch` exits with besides those of `swarmdeck run`."""


LOCK_ACQUIRE_CODES: dict[ExitCode, str] = {
    ExitCode.REFUSED: "held by another and --no-wait given",
    ExitCode.USAGE: "usage (the path's folder does not exist, no holder process)",
    ExitCode.TIMED_OUT: "still held after --timeout",
}
"""The codes `swarmdeck lock acquire` exits with besides 0, each in its own words."""


CONTROL_ROOM_CODES: dict[ExitCode, str] = {
    ExitCode.USAGE: "usage, or no terminal to draw on (a pipe, an agent's Bash tool)",
    ExitCode.TERMINAL_GONE: "its terminal went away (tmux session killed, ssh dropped, SIGHUP)",
}
"""The codes the control room (`ui`, `demo`) exits with besides 0, each in its own words."""


def codes_text(codes: tuple[ExitCode, ...], meanings: dict[ExitCode, str] = MEANING) -> str:
    """`codes` and their meanings (MEANING's, or a command's own words) on one line: "250 hit
    its own cap, 251 usage or no cage"."""
    return ", ".join(f"{int(code)} {meanings[code]}" for code in codes)
