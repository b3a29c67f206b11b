"""The exit codes swarmdeck itself uses, high enough not to collide with a command's own."""

from enum import IntEnum


class ExitCode(IntEnum):
    """Every code swarmdeck may exit with, besides the wrapped command's own status."""

    OK = 0
    REFUSED = 78
    CANNOT_EXECUTE = 126
    """The command was found but cannot be run, as a shell says it."""
    NOT_FOUND = 127
    """The command was not found, as a shell says it."""
    READER_GONE = 141
    """The reader of swarmdeck's output went away (`| head`): 128 + SIGPIPE, as a shell shows a
    command that SIGPIPE ended (`git log | head -1`)."""
    NEVER_FITS_ANY_HOST = 241
    LONG_JOB_SINGLE_HOST = 244
    GPU_OUT_OF_MEMORY = 245
    OWN_CAP = 250
    USAGE = 251
    NOT_ADMITTED = 252
    TIMED_OUT = 253
    SLICE_FULL = 254
    LOST = 255
    """The job's runner vanished (SIGKILL, a crash) before it could record how the job ended."""
