"""Which ledger owns a slice: one slice is booked by one ledger, and only its config caps it.

Runners with different state folders (or configs) would otherwise share the same slice while
each books it on its own ledger, and each would rewrite the slice's limit from its own config:
two books over one room, and a cap that flips with whoever ran last. So the first runner to
cap a slice records its ledger (the state database) and config beside the slice's name in the
machine's run folder; a runner of another ledger is refused (251, one line naming both) until
that ledger's state database is gone; the owner's runners may change the cap, and the record
says who set it and when, for `status`. The record is written only once the cap is set, so it
never claims a cap the kernel refused.

A claim lapses only when its ledger is gone and the slice holds no process (slice_owner.py);
the runner that takes it over says so in one line. Records of slices that are gone, and whose
ledgers are gone too, are removed whenever a runner claims a slice, so the run folder does not
keep one record per slice ever made (the demo's, the tests').
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict
from typing import TYPE_CHECKING

from swarmdeck import paths
from swarmdeck.actions.cage.base import Backend, CageError
from swarmdeck.file_lock import take_within
from swarmdeck.probes.slice_owner import (
    SliceOwner,
    lapsed_owner,
    read_owner,
    read_record,
    record_path,
    slice_problem,
)
from swarmdeck.regular_files import replace_private

if TYPE_CHECKING:
    # Only for the annotations: collections.abc costs every caged run its import.
    from collections.abc import Callable
    from os import PathLike

RECORD_WAIT = 5.0
"""Seconds to wait for another runner's update of the record (one write takes milliseconds)."""


def _quiet(line: str) -> None:
    """A note nobody reads."""


def claim_slice(
    backend: Backend,
    ledger: PathLike[str] | str,
    config: PathLike[str] | str | None,
    cap: int,
    note: Callable[[str], None] = _quiet,
) -> SliceOwner:
    """Make this ledger the owner of the backend's slice and cap the slice at `cap`, or confirm
    both; CageError (251) if another ledger owns it, or the cap cannot be set (then nothing is
    recorded: only the owner's runners write the cap, and the record follows the kernel).
    `note` is given the one line saying that another ledger's lapsed claim was taken over."""
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
    remove_stale_records()
    lock = _record_lock(record)
    try:
        problem = slice_problem(slice_path, mine)
        if problem:
            raise CageError(problem)
        lapsed = lapsed_owner(slice_path, mine)
        backend.prepare_slice(cap)
        owner = read_owner(slice_path)
        if owner is not None and owner.ledger == mine and owner.cap == cap:
            return owner
        claimed = SliceOwner(str(slice_path), mine, str(config or ""), cap, time.time())
        _write(record, claimed)
    finally:
        os.close(lock)
    if lapsed is not None:
        note(
            f"the claim of the ledger {lapsed.ledger} on slice {slice_path} lapses (that ledger"
            f" is gone and the slice is empty): the slice belongs to this ledger ({mine}) now"
        )
    return claimed


WARNED_MARKER = "slice-rule-said"
"""The file in a state folder that says its private-ledger warning was given."""


def private_ledger_rule(slice_setting: str, state_folder: str) -> str:
    """The line that warns a state folder given by SWARMDECK_STATE_DIR, whose config names no
    slice of its own, that its ledger claims the machine's slice; "" when that does not apply."""
    if slice_setting or os.environ.get("SWARMDECK_STATE_DIR") is None:
        return ""
    return (
        f"SWARMDECK_STATE_DIR gives the state folder {state_folder} and its config names no"
        " `[memory] slice`: its first caged run makes this ledger the owner of the machine's"
        " slice, and runs of every other state folder (the default one too) are refused there"
        " while this ledger exists; give it a slice of its own (`[memory] slice = \"…\"`)"
    )


def private_ledger_warning(slice_setting: str, state_folder: str) -> str:
    """`private_ledger_rule`, said once per state folder (a marker file there remembers it);
    "" when it does not apply or was said before."""
    rule = private_ledger_rule(slice_setting, state_folder)
    if not rule:
        return ""
    marker = os.path.join(state_folder, WARNED_MARKER)
    try:
        os.close(os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600))
    except OSError:
        return ""
    return f"{rule} (said once for this folder)"


def remove_stale_records() -> None:
    """Remove the owner records of slices that are gone whose ledgers are gone too: nothing is
    left that the claim protects. A record whose lock another runner holds is left for later."""
    folder = os.path.join(paths.run_dir(), "slices")
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        if not name.endswith(".json"):
            continue
        record = os.path.join(folder, name)
        owner = read_record(record)
        if owner is None or os.path.lexists(owner.slice) or os.path.exists(owner.ledger):
            continue
        _remove_record(record, owner, wait=0.0)


def release_claim(slice_path: PathLike[str] | str, ledgers: list[str]) -> None:
    """Remove the owner record of a slice its owner has taken down (the demo's), when it names
    one of `ledgers` and the slice is gone."""
    record = record_path(slice_path)
    owner = read_owner(slice_path)
    mine = {os.path.realpath(ledger) for ledger in ledgers}
    if owner is None or owner.ledger not in mine or os.path.lexists(slice_path):
        return
    _remove_record(record, owner)


def _remove_record(record: str, owner: SliceOwner, wait: float = RECORD_WAIT) -> None:
    """Remove the owner record `record` and its lock file, under its lock, when it still names
    `owner` and that slice is still gone; a lock held past `wait` leaves it for later."""
    try:
        lock = _record_lock(record, wait=wait)
    except (CageError, OSError):
        return
    try:
        if read_record(record) == owner and not os.path.lexists(owner.slice):
            os.unlink(record)
            os.unlink(f"{record}.lock")
    except OSError:
        pass
    finally:
        os.close(lock)


def _record_lock(record: str, wait: float = RECORD_WAIT) -> int:
    """The lock on the owner record, taken: the descriptor that holds it, for the caller to
    close; CageError when another process holds it past `wait` seconds. A lock file removed
    (with its stale record) while this one waited on it is opened again, so two runners never
    hold locks on two files of one name."""
    folder = paths.private_dir(os.path.dirname(record))
    name = os.path.join(folder, os.path.basename(record) + ".lock")
    while True:
        fd = os.open(name, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            if not take_within(fd, wait):
                raise CageError(f"the slice owner record {record} is locked by another process")
            held = os.fstat(fd)
            try:
                there = os.stat(name, follow_symlinks=False)
            except FileNotFoundError:
                there = None
        except BaseException:
            os.close(fd)
            raise
        if there is not None and (there.st_dev, there.st_ino) == (held.st_dev, held.st_ino):
            return fd
        os.close(fd)


def _write(record: str, owner: SliceOwner) -> None:
    try:
        replace_private(record, json.dumps(asdict(owner)).encode())
    except OSError as error:
        raise CageError(
            f"cannot record the owner of the slice in {record}: {error.strerror}"
        ) from None
