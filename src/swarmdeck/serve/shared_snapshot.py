"""One probe for every browser: the server takes the snapshots, each viewer reads the latest.

The server's probe thread takes the snapshot the terminal app would (reconciled, with the
sessions, CPU and usage trackers kept between rounds, the peers read in the background), runs
the watchdog over it, and writes it to a file in a folder of its own in the private state
folder: written beside it and moved into place, so a reader never sees half of one. Each viewer
process's prober waits for a snapshot newer than the last it showed and loads it.

The file is a pickle: the Snapshot's parts are typed objects that the snapshot JSON flattens
beyond reading back, and both ends are this user's processes of one installed swarmdeck. The
reader refuses a file that is not this user's or that others may write.
"""

from __future__ import annotations

import os
import pickle
import tempfile
import threading
import time
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from swarmdeck.probes.claude.sessions import SessionsProbe
from swarmdeck.probes.host import CpuSampler
from swarmdeck.probes.kernel_files import hold_open
from swarmdeck.probes.peer_prober import background_peer_prober
from swarmdeck.probes.usage import UsageTracker
from swarmdeck.snapshot import Snapshot, reconciled_snapshot
from swarmdeck.watchdog.loop import Watchdog

if TYPE_CHECKING:
    from swarmdeck.config import Config
    from swarmdeck.state import StateStore

SNAPSHOT_FILE = "snapshot.pickle"
"""The latest snapshot's file in the shared folder."""
POLL = 0.05
"""Seconds between a viewer's looks at the file while it waits for a newer snapshot."""


def shared_folder(state_folder: Path) -> Path:
    """A new folder (0700) in the state folder for this server's snapshots."""
    return Path(tempfile.mkdtemp(prefix="serve-", dir=state_folder))


class ProbeWriter:
    """The server's one probe: a thread that writes a snapshot each refresh until stopped."""

    def __init__(self, config: Config, store: StateStore, folder: Path) -> None:
        """Args:
            config: The effective configuration (its refresh interval paces the rounds).
            store: The state store the snapshots read.
            folder: Where the snapshot file goes (`shared_folder`).
        """
        self.config = config
        self.folder = folder
        self.peer_prober = background_peer_prober(config)
        self.prober = partial(
            reconciled_snapshot, config, store, CpuSampler(), SessionsProbe(), UsageTracker(),
            self.peer_prober,
        )
        self.watchdog = Watchdog(config, store)
        self.rounds = 0
        """How many snapshots were written."""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._rounds, name="swarmdeck-serve-probe",
                                        daemon=True)

    def start(self) -> None:
        """Write the first snapshot now (viewers find one at once), then go on in the thread."""
        hold_open()
        self.write_one()
        self._thread.start()

    def write_one(self) -> None:
        """Take a snapshot, run the watchdog over it and put it in place."""
        snapshot = self.watchdog.observe(self.prober())
        partial_file = self.folder / f".{SNAPSHOT_FILE}"
        partial_file.write_bytes(pickle.dumps(snapshot, protocol=pickle.HIGHEST_PROTOCOL))
        os.replace(partial_file, self.folder / SNAPSHOT_FILE)
        self.rounds += 1

    def _rounds(self) -> None:
        interval = max(0.25, self.config.ui.refresh_interval)
        while not self._stop.wait(interval):
            try:
                self.write_one()
            except Exception as error:
                # One failed round must not end serving: the viewers keep the last snapshot
                # and the next round comes as usual.
                print(f"swarmdeck serve: probe failed: {error}", flush=True)

    def stop(self) -> None:
        """End the rounds and close the peers' connections."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(5.0)
        if self.peer_prober is not None:
            self.peer_prober.close()


class SnapshotReader:
    """A viewer's prober: the newest snapshot the server wrote, waiting (up to one refresh) for
    one newer than the last it returned."""

    def __init__(self, folder: Path, wait: float) -> None:
        """Args:
            folder: The server's shared folder.
            wait: The most seconds one call waits for a newer snapshot.
        """
        self.path = folder / SNAPSHOT_FILE
        self.wait = wait
        self._seen: tuple[int, int] | None = None
        """The file's inode and mtime when last loaded: each snapshot is a new file."""
        self._last: Snapshot | None = None

    def __call__(self) -> Snapshot:
        deadline = time.monotonic() + self.wait
        while True:
            st = os.stat(self.path)
            if (st.st_ino, st.st_mtime_ns) != self._seen:
                return self._load(st)
            if self._last is not None and time.monotonic() >= deadline:
                return self._last
            time.sleep(POLL)

    def _load(self, st: os.stat_result) -> Snapshot:
        if st.st_uid != os.geteuid() or st.st_mode & 0o022:
            raise PermissionError(f"{self.path} is not this user's own private file")
        snapshot = pickle.loads(self.path.read_bytes())
        if not isinstance(snapshot, Snapshot):
            raise TypeError(f"{self.path} holds no snapshot")
        self._seen, self._last = (st.st_ino, st.st_mtime_ns), snapshot
        return snapshot
