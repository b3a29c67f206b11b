"""Read each configured peer's own `swarmdeck probe --json` over SSH, one kept-alive connection
per host (ssh_link.py), and cache what it said for the hook.

Every step has the host's timeout, so a peer that does not answer becomes "not read", never a
frozen caller. The hook path reads the cache (probes/peer_cache.py), never this module.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from swarmdeck.probes.peer_cache import (
    DISABLED,
    NOT_READ,
    PeerReading,
    reading_of,
    write_reading,
)
from swarmdeck.ssh_link import PeerNotRead, SshLink, first_line, reason_of

if TYPE_CHECKING:
    from swarmdeck.config import Config, HostConfig

TIMEOUT_EXIT = 124
"""coreutils `timeout`'s status when the time limit ended the command."""
REMOTE_GRACE = 2
"""Seconds the peer's own time limit gives the probe to stop on TERM before it is killed."""


def probe_command(host: HostConfig) -> str:
    """The command run on the peer, under a time limit of its own (coreutils `timeout`): a
    probe that gives up here stops there too, whatever the peer's sshd does with signals."""
    return f"timeout -k {REMOTE_GRACE} {host.timeout:g} {host.swarmdeck} probe --json"


def parse_probe_output(text: str) -> tuple[dict[str, Any], list[Any], list[Any]]:
    """The peer's own host object from its snapshot JSON, its `gpus` rows and its `jobs` rows
    (the figures of the jobs run there for a host like this one: probes/peer_jobs.py)."""
    try:
        snapshot = json.loads(text)
    except ValueError as error:
        raise PeerNotRead(f"bad JSON from the peer: {error}") from None
    hosts = snapshot.get("hosts") if isinstance(snapshot, dict) else None
    if not isinstance(hosts, list) or not hosts or not isinstance(hosts[0], dict):
        raise PeerNotRead("bad JSON from the peer: no hosts[0] object")
    gpus = snapshot.get("gpus")
    jobs = snapshot.get("jobs")
    return (
        hosts[0], gpus if isinstance(gpus, list) else [], jobs if isinstance(jobs, list) else []
    )


class PeerProber:
    """Reads every peer over an SSH link of its own (one loop thread, one connection per peer).

    `read_all` is called from any one thread at a time (the app's probe worker, or `status`);
    a connection that fails is dropped and made again on the next read.
    """

    def __init__(self, *, wait: bool = True) -> None:
        """Args:
            wait: Whether `read_all` waits for this round's readings (`status`), or returns
                the last finished round's at once and reads on in the background (the app,
                whose local figures must not wait for a slow peer).
        """
        self._wait = wait
        self._link = SshLink("swarmdeck-peers")
        self._latest: dict[str, PeerReading] = {}
        self._round: Future[list[PeerReading]] | None = None

    def read_all(self, config: Config) -> list[PeerReading]:
        """Every configured peer (the enabled ones read at once); each reading is cached."""
        if self._wait:
            return self._link.call(self._read_all(config.hosts))
        if self._round is None or self._round.done():
            self._round = self._link.submit(self._read_all(config.hosts))
        return [self._latest_of(host) for host in config.hosts]

    def _latest_of(self, host: HostConfig) -> PeerReading:
        if not host.enabled:
            return PeerReading(host.name, DISABLED, reason="enabled = false")
        held = self._latest.get(host.name)
        return held or PeerReading(host.name, NOT_READ, reason="reading…")

    @property
    def running(self) -> bool:
        """Whether the prober can still read (it has not been closed)."""
        return self._link.running

    def close(self) -> None:
        """Stop a round still reading (a background one), close every connection and stop the
        loop; the prober cannot be used after."""
        self._link.close()

    async def _read_all(self, hosts: tuple[HostConfig, ...]) -> list[PeerReading]:
        readings = list(await asyncio.gather(*(self._read(host) for host in hosts)))
        for reading in readings:
            self._latest[reading.name] = reading
            if reading.state != DISABLED:
                write_reading(reading)
        return readings

    async def _read(self, host: HostConfig) -> PeerReading:
        if not host.enabled:
            await self._link.drop(host.name)
            return PeerReading(host.name, DISABLED, reason="enabled = false")
        try:
            figures, gpus, jobs = await asyncio.wait_for(self._probe(host), host.timeout)
        except Exception as error:  # every failure is this host's "not read", with its reason
            await self._link.drop(host.name)
            return PeerReading(
                host.name, NOT_READ, reason=reason_of(error, host.timeout), read_at=time.time()
            )
        return reading_of(host.name, figures, time.time(), gpus, jobs)

    async def _probe(self, host: HostConfig) -> tuple[dict[str, Any], list[Any], list[Any]]:
        connection = await self._link.connection(host)
        process = await connection.create_process(probe_command(host))
        try:
            out, err = await process.communicate()
        except asyncio.CancelledError:
            # Given up (the host's timeout): ask the peer to stop the command before the
            # connection goes; its own time limit ends it if the signal is not passed on.
            with contextlib.suppress(Exception):
                process.terminate()
            process.close()
            raise
        stdout = out if isinstance(out, str) else ""
        stderr = err if isinstance(err, str) else ""
        exit_status = process.exit_status
        if exit_status != 0:
            why = first_line(stderr)
            status = (
                "closed without an exit status"
                if exit_status is None
                else "its own time limit stopped it"
                if exit_status == TIMEOUT_EXIT
                else f"exit {exit_status}"
            )
            raise PeerNotRead(f"remote {status}" + (f": {why}" if why else ""))
        return parse_probe_output(stdout)
