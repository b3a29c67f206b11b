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
