"""This host's name and its meminfo, apart from the snapshot classes in probes/host.py.

Every `swarmdeck run` needs these three facts at start; building the host snapshot's
dataclasses for them would add to each caged command's start-up. probes/host.py re-exports
them, so both import paths name the same functions.
"""

from __future__ import annotations

import os

# Read by the procs probe, the one reader of the process filesystem; re-exported here for
# this module's readers.
from swarmdeck.probes.procs import parse_meminfo as parse_meminfo
from swarmdeck.probes.procs import read_meminfo as read_meminfo


def local_host_name() -> str:
    """The `host` the ledger's rows are written with: the kernel's node name, which is what
    gethostname() returns on Linux, without the socket module's import time."""
    return os.uname().nodename


def mem_total() -> int:
    """MemTotal in bytes: what `70%` in a size means."""
    return read_meminfo()["MemTotal"]
