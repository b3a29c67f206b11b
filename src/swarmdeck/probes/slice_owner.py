"""Reading which ledger owns a slice and who set its cap (the record actions/cage/slice_claim.py
writes).

The record lives in the machine's run folder, keyed by the slice's path, so runners of every
state folder find the same one; `status` shows it beside the slice. `slice_problem` is the one
test of whether a ledger may use the slice: the runner refuses on it, and the memory book
(status, probe, the hooks, dispatch) shows the same line as the slice's problem.

A claim holds while its ledger (the state database) exists, and also while the slice holds any
process, whoever's: a moved state folder leaves its jobs running in the slice, and a second
ledger booking beside them is the overbooking the rule is there to prevent. It lapses only
when the ledger is gone and the slice is empty; the runner that takes it over says so.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING

from swarmdeck import paths
from swarmdeck.probes.cgroups import cage_members
from swarmdeck.regular_files import read_regular

if TYPE_CHECKING:
    from os import PathLike

MAX_RECORD = 64 * 1024


@dataclass(frozen=True)
class SliceOwner:
    """The ledger a slice belongs to and who last set its cap."""

    slice: str
    ledger: str
    """The owner's state database (resolved path)."""
    config: str
    """The config whose memory.reserve set the cap ("" for the embedded defaults)."""
    cap: int
    set_at: float


def record_path(slice_path: PathLike[str] | str) -> str:
    """The owner record of a slice, in the machine's run folder."""
    digest = hashlib.sha256(str(slice_path).encode()).hexdigest()[:16]
    return os.path.join(paths.run_dir(), "slices", f"{digest}.json")


def read_owner(slice_path: PathLike[str] | str) -> SliceOwner | None:
    """The recorded owner of the slice, or None when there is no usable record."""
    return read_record(record_path(slice_path))


def read_record(record: str) -> SliceOwner | None:
    """The owner record in the file `record`, or None when it is not a usable one."""
    try:
        data = json.loads(read_regular(record, MAX_RECORD))
        return SliceOwner(**{item.name: data[item.name] for item in fields(SliceOwner)})
    except (OSError, ValueError, KeyError, TypeError):
        return None


def slice_pids(slice_path: PathLike[str] | str) -> tuple[int, ...]:
    """The processes in the slice and every cgroup under it; empty when it is gone."""
    members = cage_members(slice_path)
    return () if members is None else members.pids


def lapsed_owner(slice_path: PathLike[str] | str, ledger: PathLike[str] | str) -> SliceOwner | None:
    """The other ledger's claim on the slice that has lapsed (its state database is gone and the
    slice holds no process), which this ledger may take over; None when there is none."""
    owner = read_owner(slice_path)
    if owner is None or owner.ledger == os.path.realpath(ledger):
        return None
    if os.path.exists(owner.ledger) or slice_pids(slice_path):
        return None
    return owner


def slice_problem(slice_path: PathLike[str] | str, ledger: PathLike[str] | str) -> str:
    """Why the ledger (a state database) may not use the slice: another ledger owns it, and that
    ledger's state database still exists or the slice still holds a process. "" when it may (no
    owner, this one, or a claim that has lapsed)."""
    owner = read_owner(slice_path)
    mine = os.path.realpath(ledger)
    if owner is None or owner.ledger == mine:
        return ""
    config = f"config {owner.config}" if owner.config else "config defaults"
    if os.path.exists(owner.ledger):
        return (
            f"slice {slice_path} belongs to the ledger {owner.ledger} ({config}), not to this"
            f" one ({mine}): give this state folder its own slice (`[memory] slice = \"…\"` in"
            " its config), or use that state folder"
        )
    pids = slice_pids(slice_path)
    if not pids:
        return ""
    shown = ", ".join(map(str, pids[:5])) + (", …" if len(pids) > 5 else "")
    return (
        f"slice {slice_path} belongs to the ledger {owner.ledger} ({config}), which is gone, but"
        f" processes still run in the slice (pid {shown}): its claim holds until they end; give"
        f" this state folder ({mine}) its own slice (`[memory] slice = \"…\"` in its config),"
        " or put that state folder back"
    )
