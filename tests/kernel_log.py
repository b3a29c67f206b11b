"""A kernel log a test owns: a file of kmsg records and a `dmesg` that prints a file of its own.

Tests hand these to probes/kernel.py (and gpu-run) instead of the machine's /dev/kmsg, so a run
of the suite never adds a line to the real kernel log.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

_APPEND_KMSG = """\
import sys, time
path, text = sys.argv[1], sys.argv[2]
try:
    seq = sum(1 for line in open(path) if not line.startswith(" "))
except FileNotFoundError:
    seq = 0
with open(path, "a") as log:
    log.write(f"3,{seq + 1},{int(time.monotonic() * 1_000_000)},-;{text}\\n")
"""

_APPEND_DMESG = """\
import sys, time
with open(sys.argv[1], "a") as log:
    log.write(f"[{time.monotonic():12.6f}] {sys.argv[2]}\\n")
"""


@dataclass(frozen=True)
class FakeKernelLog:
    """Both sources of one fake kernel log under `folder`; stamps are on the kernel's clock
    (CLOCK_MONOTONIC), so time windows read them as they read the real log."""

    folder: Path

    @property
    def kmsg(self) -> Path:
        return self.folder / "kmsg"

    @property
    def dmesg_file(self) -> Path:
        return self.folder / "dmesg.txt"

    @property
    def dmesg(self) -> tuple[str, ...]:
        """A `dmesg` command that prints this log's dmesg file."""
        self.dmesg_file.touch()
        return ("cat", str(self.dmesg_file))

    def kmsg_command(self, text: str) -> list[str]:
        """A command that logs `text` as the next kmsg record, as a driver would."""
        self.kmsg.touch()
        return [sys.executable, "-c", _APPEND_KMSG, str(self.kmsg), text]

    def dmesg_command(self, text: str) -> list[str]:
        """A command that logs `text` where only `dmesg` sees it."""
        self.dmesg_file.touch()
        return [sys.executable, "-c", _APPEND_DMESG, str(self.dmesg_file), text]

    def log_kmsg(self, text: str) -> None:
        """Log `text` as a kmsg record now, from the test itself."""
        subprocess.run(self.kmsg_command(text), check=True)


def machine_records(after_seq: int | None = None) -> list[tuple[int, str]] | None:
    """(seq, text) of the machine's own kmsg records after `after_seq`; None when this user
    cannot read /dev/kmsg. Only read: the suite checks that it never writes there."""
    from swarmdeck.probes import kernel

    try:
        raw = list(kernel._kmsg_records(kernel.KMSG))
    except OSError:
        return None
    records = []
    for record in raw:
        line = kernel.parse_kmsg_record(record)
        if line is None or line.seq is None:
            continue
        if after_seq is None or line.seq > after_seq:
            records.append((line.seq, line.text))
    return records


OOM_REPORT_WORDS = ("oom", "memory cgroup", "memcg", "killed process")
"""Words of the kernel's own OOM report, which names the test cages it killed in."""


def written_by_tests(records: list[tuple[int, str]]) -> list[str]:
    """The records a test wrote itself: its markers, outside the kernel's OOM reports (the real
    cage OOM tests make the kernel report kills in swarmdeck-test-* cgroups)."""
    found = []
    for _, text in records:
        lowered = text.lower()
        marked = "swarmdeck-test" in lowered or "nv_err_no_memory" in lowered
        if marked and not any(word in lowered for word in OOM_REPORT_WORDS):
            found.append(text)
    return found
