"""What was last read from each peer, one small JSON file per host under the state folder.

The SSH probe writes it and the heavy-command hook reads it: the hook must answer in
milliseconds and never opens SSH, so a peer's figures reach it only through this file.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from swarmdeck.durations import age_text
from swarmdeck.ledger.schema import RUNNING
from swarmdeck.paths import state_dir
from swarmdeck.probes.memory_book import MemoryBook
from swarmdeck.regular_files import replace_private

if TYPE_CHECKING:
    from typing import Any

    from swarmdeck.probes.host import HostSnapshot

READ = "read"
NOT_READ = "not read"
DISABLED = "disabled"


@dataclass(frozen=True)
class PeerReading:
    """One attempt to read a peer: its figures when it answered, else why not."""

    name: str
    state: str
    """"read", "not read" or "disabled"."""
    reason: str = ""
    """One line saying why it was not read; empty when it was."""
    figures: dict[str, Any] = field(default_factory=dict)
    """The peer's own host object as it sent it (`swarmdeck probe --json`'s hosts[0]); passed
    on unchanged into the snapshot JSON and the cache. Empty unless read."""
    read_at: float | None = None
    """When this attempt ended (epoch seconds); None for a host never tried."""
    host: HostSnapshot | None = None
    """The peer's cores and memory, parsed from `figures`; None unless read."""
    book: MemoryBook | None = None
    """The peer's memory book, parsed from `figures`; None unless read with a book."""
    gpus: list[dict[str, Any]] = field(default_factory=list)
    """The `gpus` rows of the peer's own snapshot, as it sent them; empty unless read."""
    jobs: list[dict[str, Any]] = field(default_factory=list)
    """The peer's running jobs as its own snapshot's `jobs` rows, for the figures of the jobs
    this host runs there (probes/peer_jobs.py); empty unless read over SSH (the cache the hook
    reads leaves them out)."""

    @property
    def gpus_free(self) -> int | None:
        """Cards there with no foreign compute process; None when the peer gave no card rows
        (an older peer, or one whose NVML was not read)."""
        cards = [row for row in self.gpus if isinstance(row, dict) and row.get("index") is not None]
        if not cards:
            return None
        return sum(1 for card in cards if _card_free(card))

    @property
    def no_gpu(self) -> str | None:
        """Why the peer has no GPU card at all, when its reading says so (its one `gpus` row
        is in the "no GPU" state); None when it has cards, or its figures do not say."""
        from swarmdeck.probes.nvml import NO_GPU

        for row in self.gpus:
            if isinstance(row, dict) and row.get("index") is None and row.get("state") == NO_GPU:
                return str(row.get("reason") or "")
        return None

    def to_json(self) -> dict[str, Any]:
        """The peer as a host object of the snapshot JSON: its figures, `local: false`, a state."""
        out = dict(self.figures)
        if "name" in out:
            out["remote_name"] = out["name"]
        out.update(
            name=self.name, local=False, state=self.state, reason=self.reason, read_at=self.read_at
        )
        return out

    def cache_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "state": self.state,
            "reason": self.reason,
            "read_at": self.read_at,
            "host": self.figures,
            "gpus": self.gpus,
        }


def _card_free(card: dict[str, Any]) -> bool:
    """A card read cleanly whose every compute process is expected (allowlisted or under a
    gpu-run wrapper), the same test this host applies to its own cards."""
    processes = card.get("processes")
    if card.get("reason") or card.get("state") != "ok" or not isinstance(processes, list):
        return False
    return not any(
        isinstance(p, dict) and not p.get("allowlisted") and p.get("holder") is None
        for p in processes
    )


def reading_of(
    name: str, figures: dict[str, Any], read_at: float | None, gpus: list[Any] | None = None,
    jobs: list[Any] | None = None,
) -> PeerReading:
    """A peer that answered with `figures`, parsed here once into its host and book; figures
    that do not parse make it "not read" saying which one is wrong."""
    try:
        # Here, not at the top: the runner reads peer caches, and has no use for the host probe's
        # imports unless a peer's reading is really parsed.
        from dataclasses import replace

        from swarmdeck.probes.host import HostSnapshot

        host = replace(HostSnapshot.from_json(figures), name=name, local=False)
        book = MemoryBook.from_host_fields(host, figures)
    except ValueError as error:
        return PeerReading(name, NOT_READ, reason=f"figures unusable: {error}", read_at=read_at)
    rows = [row for row in gpus or [] if isinstance(row, dict)]
    running = [row for row in jobs or [] if isinstance(row, dict) and row.get("state") == RUNNING]
    return PeerReading(
        name, READ, figures=figures, read_at=read_at, host=host, book=book, gpus=rows,
        jobs=running,
    )


def cache_path(name: str) -> str:
    """The file that holds `name`'s last reading."""
    return os.path.join(state_dir(), "peers", f"{name}.json")


def write_reading(reading: PeerReading) -> None:
    """Replace the host's file in one rename, so a reader sees the old reading or the new."""
    path = cache_path(reading.name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    replace_private(path, json.dumps(reading.cache_json()).encode())


def read_cached(name: str) -> PeerReading | None:
    """The host's last reading, or None when nothing was ever written for it.

    A file that cannot be used reads as "not read" with the reason, never as figures.
    """
    try:
        with open(cache_path(name), encoding="utf-8") as source:
            data = json.load(source)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as error:
        return PeerReading(name, NOT_READ, reason=f"cached reading unreadable: {error}")
    if not isinstance(data, dict) or not isinstance(data.get("host", {}), dict):
        return PeerReading(name, NOT_READ, reason="cached reading unreadable: not an object")
    read_at = data.get("read_at")
    when = float(read_at) if isinstance(read_at, int | float) else None
    state = str(data.get("state", NOT_READ))
    if state == READ:
        gpus = data.get("gpus")
        rows = gpus if isinstance(gpus, list) else []
        return reading_of(name, data.get("host") or {}, when, rows)
    return PeerReading(name, state, reason=str(data.get("reason", "")), read_at=when)


def fresh_for(refresh_interval: float) -> float:
    """How long a reading stays current: three app refreshes, and never under 30 s."""
    return max(3 * refresh_interval, 30.0)


def current_reading(name: str, refresh_interval: float, now: float | None = None) -> PeerReading:
    """The cached reading if it is fresh; else "not read" saying why, or how old the last is."""
    reading = read_cached(name)
    if reading is None:
        return PeerReading(name, NOT_READ, reason="no cached figures")
    if reading.state != READ:
        return PeerReading(name, NOT_READ, reason=reading.reason, read_at=reading.read_at)
    now = time.time() if now is None else now
    if reading.read_at is None:
        return PeerReading(name, NOT_READ, reason="cached reading has no time")
    age = now - reading.read_at
    if age > fresh_for(refresh_interval):
        return PeerReading(
            name, NOT_READ, reason=f"last read {age_text(age)} ago", read_at=reading.read_at
        )
    return reading
