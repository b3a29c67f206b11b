"""The control room's probe thread: it takes a snapshot, posts it to the app in one message
and sleeps until the next refresh or until `probe` asks for one now. One thread for the app's
life: a Textual Worker per refresh would cost more than the refresh itself on an idle machine
(a thread start, its state messages, a timer to re-arm it)."""

from __future__ import annotations

import threading
from collections.abc import Callable

from textual.message import Message
from textual.message_pump import MessagePump

from swarmdeck.probes.kernel_files import release_unread
from swarmdeck.snapshot import Snapshot

STOP_WAIT = 5.0
"""Seconds stopping waits for a probe under way to finish before the app closes what it uses."""


class ProbeLoop:
    """Probes read kernel files and SQLite, never on the UI loop: one round at a time, each
    refresh interval or when `probe` asks, until `stop`."""

    class SnapshotReady(Message):
        """The probe thread finished a snapshot."""

        def __init__(self, snapshot: Snapshot) -> None:
            super().__init__()
            self.snapshot = snapshot

    class ProbeFailed(Message):
        """The probe thread's round raised; the next round comes as usual."""

        def __init__(self, error: Exception) -> None:
            super().__init__()
            self.error = error

    def __init__(self, take: Callable[[], Snapshot], interval: float, to: MessagePump) -> None:
        """Args:
            take: One round: a snapshot (with the watchdog's pass, if any).
            interval: Seconds between rounds.
            to: Who is posted each round's message (the app).
        """
        self._take = take
        self._interval = interval
        self._to = to
        self._now = threading.Event()
        """Set to end the wait: a refresh asked for, or the loop stopping."""
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._rounds, name="swarmdeck-probe", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def probe(self) -> None:
        """Refresh now: the next round starts at once (right after the one under way, if any).
        Safe from any thread."""
        self._now.set()

    def stop(self) -> None:
        """End the loop, waiting (a while) for a round under way."""
        self._stopping.set()
        self._now.set()
        if self._thread.is_alive():
            self._thread.join(STOP_WAIT)

    def _rounds(self) -> None:
        while not self._stopping.is_set():
            self._now.clear()
            try:
                snapshot = self._take()
            except Exception as error:  # shown to the person; the next round may well work
                self._to.post_message(self.ProbeFailed(error))
            else:
                self._to.post_message(self.SnapshotReady(snapshot))
            release_unread()
            self._now.wait(self._interval)
