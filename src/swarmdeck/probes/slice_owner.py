"""Reading which ledger owns a slice and who set its cap (the record actions/cage/owner.py writes).

The record lives in the machine's run folder, keyed by the slice's path, so runners of every
state folder find the same one; `status` shows it beside the slice. `slice_problem` is the one
test of whether a ledger may use the slice: the runner refuses on it, and the memory book
(status, probe, the hooks, dispatch) shows the same line as the slice's problem.
"""

from __future__ import annotations

import os

from swarmdeck import json_text, paths
from swarmdeck.digest import short_sha256
from swarmdeck.records import dataclass, fields
from swarmdeck.regular_files import read_regular

TYPE_CHECKING = False
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
    digest = short_sha256(str(slice_path))
    return os.path.join(paths.run_dir_text(), "slices", f"{digest}.json")


def read_owner(slice_path: PathLike[str] | str) -> SliceOwner | None:
    """The recorded owner of the slice, or None when there is no usable record."""
    try:
        data = json_text.loads(read_regular(record_path(slice_path), MAX_RECORD))
        return SliceOwner(**{item.name: data[item.name] for item in fields(SliceOwner)})
    except (OSError, ValueError, KeyError, TypeError):
        return None


def slice_problem(slice_path: PathLike[str] | str, ledger: PathLike[str] | str) -> str:
    """Why the ledger (a state database) may not use the slice: another ledger owns it and that
    ledger's state database still exists. "" when it may (no owner, this one, or one gone)."""
    owner = read_owner(slice_path)
    mine = os.path.realpath(ledger)
    if owner is None or owner.ledger == mine or not os.path.exists(owner.ledger):
        return ""
    config = f"config {owner.config}" if owner.config else "config defaults"
    return (
        f"slice {slice_path} belongs to the ledger {owner.ledger} ({config}), not to this one"
        f" ({mine}): give this state folder its own slice (`[memory] slice = \"…\"` in its"
        " config), or use that state folder"
    )
