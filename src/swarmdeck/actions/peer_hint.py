"""While a job queues here for memory, say once which peer could run it now, with the exact
`swarmdeck peer run …` line, and raise an alert; never move the job.

It reads each enabled peer's cached reading (probes/peer_cache.py), never opens SSH, so a
queued runner stays as light as before. The alert's key names the workload and the peer, so a
job queuing again counts up one alert instead of adding rows; the watchdog rule "this host
queuing on memory while the peer could fit the job" reads it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from swarmdeck.sizes import format_size
from swarmdeck.state import now

if TYPE_CHECKING:
    from collections.abc import Callable

    from swarmdeck.actions.booking import Booking
    from swarmdeck.actions.run_request import RunRequest
    from swarmdeck.config import Config, HostConfig
    from swarmdeck.state import StateStore

ALERT_SOURCE = "runner"
PEER_FITS = "peer-fits:"
"""The key prefix of the alert, followed by the peer's name and the workload's fingerprint;
the watchdog's pass resolves the alert once that workload no longer queues here."""


def peer_room(host: HostConfig, booked: int, cap: int, refresh_interval: float) -> int | None:
    """The peer's room now if its fresh cached reading holds `booked` (and its cap for one job
    allows `cap`); None when it does not, or nothing fresh is known."""
    # Here, not at the top: every caged run makes a PeerHint, only a queued one reads peers.
    from swarmdeck.probes.peer_cache import READ, current_reading

    reading = current_reading(host.name, refresh_interval)
    if reading.state != READ:
        return None
    book = reading.book
    if book is None:
        return None
    if host.job_cap is not None and cap > host.job_cap.resolve(book.mem_total):
        return None
    usable = book.usable
    return usable if booked <= usable else None


def peer_run_line(host: str, request: RunRequest, label: str) -> str:
    """The command that runs this request on `host` instead, quoted for a shell."""
    import shlex

    args = ["swarmdeck", "peer", "run", host]
    if request.cap is not None:
        args += ["--cap", request.cap]
    args += ["--label", label, "--", *request.argv]
    return shlex.join(args)


class PeerHint:
    """A runner's `note` that, on a "queued:" line or when the job is refused here, names once a
    peer whose cached reading fits the job now, with the exact `swarmdeck peer run …` line, and
    raises an alert. It never moves the job."""

    def __init__(
        self,
        config: Config,
        store: StateStore,
        request: RunRequest,
        label: str,
        booking: Booking,
        workload: str,
        note: Callable[[str], None],
    ) -> None:
        self._config, self._store, self._request = config, store, request
        self._label, self._booking, self._workload, self._note = label, booking, workload, note
        self._peers = [host for host in config.hosts if host.enabled]
        self._told = False

    def __call__(self, line: str) -> None:
        self._note(line)
        if line.startswith("queued:"):
            self.offer()

    def offer(self) -> None:
        """Name the first enabled peer that fits the job now, unless one was named already."""
        if self._told:
            return
        for host in self._peers:
            room = peer_room(
                host, self._booking.booked, self._booking.cap, self._config.ui.refresh_interval
            )
            if room is None:
                continue
            self._told = True
            command = peer_run_line(host.name, self._request, self._label)
            self._note(f"{host.name} has room for it now ({format_size(room)}); to run it there "
                       f"instead: {command}")
            # Here, not at the top: only a queued job that a peer fits raises an alert.
            from swarmdeck.actions.alerts import raise_alert
            from swarmdeck.probes.machine import local_host_name

            # The alert is about this host, where the job queues; the peer is named in it.
            here = local_host_name()
            message = (
                f"{self._label!r} queues on {here} for memory; {host.name} fits it now: {command}"
            )
            with self._store.transaction() as conn:
                raise_alert(
                    conn, f"{PEER_FITS}{host.name}:{self._workload}", "info", ALERT_SOURCE,
                    here, message, now(),
                )
            return
