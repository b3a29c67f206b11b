"""What `swarmdeck run` was asked to do; a leaf, so runner and detach share it without a circle."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from swarmdeck.config import MAX_SIZE, MAX_THREADS
from swarmdeck.durations import seconds_problem
from swarmdeck.errors import UsageError
from swarmdeck.sizes import format_size

WORKLOAD_ENV = "SWARMDECK_WORKLOAD"
"""Set by a peer run's driver for the peer's runner: the workload fingerprint made where the
command was asked for. The copy it runs in is a fresh folder each time, so a fingerprint made
there would be new every run and the workload would never learn."""
RESULT_ENV = "SWARMDECK_RESULT_FILE"
"""Set the same way: the file the peer's runner writes the run's peak into, for the driver to
record here."""

STOP_GRACE = 5.0
"""Seconds a job's tree gets between SIGTERM and SIGKILL on timeout or runner stop."""


MIN_CAP = 4 * 1024**2
"""The least cap a job can be given. The cage holds the runner's own child from fork to exec
and then the program it execs: under about 512K that child is killed before it execs at all,
under 1M a shell starts but Python does not, and 4M (measured) starts `true`, `sh -c` and
`python -c` alike. A smaller cap could only end as the job's own OOM, blamed on the job."""


def checked_cap(text: str, cap: int) -> int:
    """`cap`, the bytes `--cap text` came to on its host, if it is a cap a job can be given:
    at least MIN_CAP, and at most MAX_SIZE, which the ledger's integers hold; else UsageError
    (251)."""
    if cap <= 0:
        raise UsageError(f"--cap {text} is no memory at all: give a size like 512M or 8G")
    if cap < MIN_CAP:
        raise UsageError(
            f"--cap {text} is under {format_size(MIN_CAP)}, the least a job can be given"
            " (swarmdeck's own child needs it to start the job): give a size like 512M or 8G"
        )
    if cap > MAX_SIZE:
        raise UsageError(
            f"--cap {text} is over {format_size(MAX_SIZE)}, the most a size may be: "
            "give a size like 512M or 8G"
        )
    return cap


def bad_threads(given: object, most: int = MAX_THREADS) -> UsageError:
    """The one wording of a thread count refused, wherever it was given (`--threads`, the
    launch form's field): no whole number and out of range alike say the range, 1 to `most`
    (MAX_THREADS, or the host's cores where the launch form takes no more)."""
    return UsageError(f"--threads {given}: give a number from 1 to {most}")


def checked_threads(threads: int | None, most: int = MAX_THREADS) -> int | None:
    """`--threads`, if it is a count a job may declare: 1 to `most` (MAX_THREADS, which the
    ledger's integers hold; None: not given); else UsageError (251)."""
    if threads is not None and not 1 <= threads <= most:
        raise bad_threads(threads, most)
    return threads


def thread_count(text: str, most: int = MAX_THREADS) -> int:
    """`--threads text` as a whole number from 1 to `most`; else UsageError (251) in
    bad_threads' words, not argparse's "invalid int value"."""
    try:
        threads = int(text)
    except ValueError:
        raise bad_threads(text, most) from None
    if not 1 <= threads <= most:
        raise bad_threads(text, most)
    return threads


def checked_seconds(flag: str, seconds: float | None, *, zero_ok: bool) -> float | None:
    """`seconds`, given to `flag` (--wait, --timeout), if it is a span the flag may give, by
    the rule of durations.seconds_problem (None: not given); else UsageError (251).

    The command line refuses such a value as it reads the flag; this holds a request built in
    code rather than read from one to the same rule."""
    problem = None if seconds is None else seconds_problem(seconds, zero_ok=zero_ok)
    if problem is not None:
        raise UsageError(f"{flag} {seconds:g} {problem}")
    return seconds


INPUTS_HEADER = "# swarmdeck: inputs "
"""A script line naming its inputs, as `--inputs` would (`# swarmdeck: inputs src/ tests/`)."""
SHELLS = frozenset({"sh", "bash", "dash", "zsh", "python", "python3"})


def script_inputs(argv: list[str], cwd: str) -> tuple[str, ...]:
    """The inputs a run's script names in its first lines: the script is the command's first
    word when it is a path (`./check.sh`), else the word after an interpreter (`sh check.sh`)."""
    if not argv:
        return ()
    name = argv[0].rsplit("/", 1)[-1]
    script = argv[1] if name in SHELLS and len(argv) > 1 else argv[0]
    if "/" not in script and script == argv[0]:
        return ()
    path = os.path.join(cwd, script)
    if not os.path.isfile(path):
        return ()
    try:
        with open(path, "rb") as file:
            head = file.read(4096).decode(errors="replace")
    except OSError:
        return ()
    for line in head.splitlines()[:20]:
        if line.startswith(INPUTS_HEADER):
            return tuple(line[len(INPUTS_HEADER):].split())
    return ()


@dataclass(frozen=True)
class RunRequest:
    """What `swarmdeck run` was asked to do."""

    argv: list[str]
    cap: str | None = None
    label: str | None = None
    threads: int | None = None
    unbounded: bool = False
    wait: float | None = None
    """Seconds to queue for room; None: the config's memory.admission_wait."""
    timeout: float | None = None
    detach: bool = False
    cwd: str = field(default_factory=os.getcwd)
    grace: float = STOP_GRACE
