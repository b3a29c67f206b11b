"""Which ledger owns a slice: one slice is booked by one ledger, and only its config caps it.

Runners with different state folders (or configs) would otherwise share the same slice while
each books it on its own ledger, and each would rewrite the slice's limit from its own config:
two books over one room, and a cap that flips with whoever ran last. So the first runner to
cap a slice records its ledger (the state database) and config beside the slice's name in the
machine's run folder; a runner of another ledger is refused (251, one line naming both) until
that ledger's state database is gone; the owner's runners may change the cap, and the record
says who set it and when, for `status`. The record is written only once the cap is set, so it
never claims a cap the kernel refused.
"""

from __future__ import annotations

import os
import time

from swarmdeck import json_text, paths
from swarmdeck.actions.cage.base import Backend, CageError
from swarmdeck.file_lock import take_within
from swarmdeck.probes.slice_owner import SliceOwner, read_owner, record_path, slice_problem
from swarmdeck.records import asdict
from swarmdeck.regular_files import replace_private

TYPE_CHECKING = False
if TYPE_CHECKING:
    from os import PathLike

RECORD_WAIT = 5.0
"""Seconds to wait for another runner's update of the record (one write takes milliseconds)."""


def claim_slice(
    backend: Backend, ledger: PathLike[str] | str, config: PathLike[str] | str | None, cap: int
) -> SliceOwner:
    """Make this ledger the owner of the backend's slice and cap the slice at `cap`, or confirm
    both; CageError (251) if another ledger owns it, or the cap cannot be set (then nothing is
    recorded: only the owner's runners write the cap, and the record follows the kernel)."""
    slice_path = backend.slice_path
    mine = os.path.realpath(ledger)
    record = record_path(slice_path)
    paths.private_dir(os.path.dirname(record))
    owner = read_owner(slice_path)
    if owner is not None and owner.ledger == mine and owner.cap == cap:
        # The record is only ever replaced in one rename, so it is read whole without the lock;
        # only a change needs it, and every runner of the owner at this cap goes by at once
        # instead of queueing on a lock its holder keeps while it waits for a CPU.
        backend.prepare_slice(cap)
        return owner
    lock = _record_lock(record)
    try:
        problem = slice_problem(slice_path, mine)
        if problem:
            raise CageError(problem)
        backend.prepare_slice(cap)
        owner = read_owner(slice_path)
        if owner is not None and owner.ledger == mine and owner.cap == cap:
            return owner
        claimed = SliceOwner(str(slice_path), mine, str(config or ""), cap, time.time())
        _write(record, claimed)
        return claimed
    finally:
        os.close(lock)


def _record_lock(record: str) -> int:
    """The lock on the owner record, taken: the descriptor that holds it, for the caller to
    close; CageError when another process holds it past RECORD_WAIT."""
    folder = paths.private_dir(os.path.dirname(record))
    fd = os.open(
        os.path.join(folder, os.path.basename(record) + ".lock"),
        os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC,
        0o600,
    )
    try:
        if not take_within(fd, RECORD_WAIT):
            raise CageError(f"the slice owner record {record} is locked by another process")
    except BaseException:
        os.close(fd)
        raise
    return fd


def _write(record: str, owner: SliceOwner) -> None:
    try:
        replace_private(record, json_text.dumps(asdict(owner)).encode())
    except OSError as error:
        raise CageError(
            f"cannot record the owner of the slice in {record}: {error.strerror}"
        ) from None
