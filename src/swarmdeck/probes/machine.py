"""This host's name and its /proc/meminfo, apart from the snapshot classes in probes/host.py.

Every `swarmdeck run` needs these three facts at start; building the host snapshot's
dataclasses for them would add to each caged command's start-up. probes/host.py re-exports
them, so both import paths name the same functions.
"""

from __future__ import annotations

import os
from pathlib import Path

PROC_MEMINFO = Path("/proc/meminfo")


def local_host_name() -> str:
    """The `host` the ledger's rows are written with: the kernel's node name, which is what
    gethostname() returns on Linux, without the socket module's import time."""
    return os.uname().nodename


def parse_meminfo(text: str) -> dict[str, int]:
    """/proc/meminfo as bytes per field."""
    fields: dict[str, int] = {}
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        parts = rest.split()
        if not parts:
            continue
        value = int(parts[0])
        fields[key] = value * 1024 if len(parts) > 1 and parts[1] == "kB" else value
    return fields


def read_meminfo() -> dict[str, int]:
    return parse_meminfo(PROC_MEMINFO.read_text())


def mem_total() -> int:
    """MemTotal in bytes: what `70%` in a size means."""
    return read_meminfo()["MemTotal"]
