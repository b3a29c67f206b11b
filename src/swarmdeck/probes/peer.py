"""Read each configured peer's own `swarmdeck probe --json` over SSH, one kept-alive connection
per host, and cache what it said for the hook.

Host keys are always verified: against the host's known_hosts file, else ~/.ssh/known_hosts.
Every step has the host's timeout, so a peer that does not answer becomes "not read", never a
frozen caller. This is the only module that imports asyncssh; the hook path reads the cache
(probes/peer_cache.py) instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import json
import os
import threading
import time
from collections.abc import Coroutine
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, TypeVar

import asyncssh

from swarmdeck.breaks import broken
from swarmdeck.probes.peer_cache import (
    DISABLED,
    NOT_READ,
    PeerReading,
    reading_of,
    write_reading,
)

if TYPE_CHECKING:
    from swarmdeck.config import Config, HostConfig

T = TypeVar("T")


class PeerNotRead(Exception):
    """A peer that did not give usable figures; the message is the one-line reason."""


def known_hosts_file(host: HostConfig) -> str:
    """The known_hosts file that must vouch for the peer's key; never "trust anything"."""
    return os.path.expanduser(host.known_hosts or os.path.join("~", ".ssh", "known_hosts"))


TIMEOUT_EXIT = 124
"""coreutils `timeout`'s status when the time limit ended the command."""
REMOTE_GRACE = 2
"""Seconds the peer's own time limit gives the probe to stop on TERM before it is killed."""


def probe_command(host: HostConfig) -> str:
    """The command run on the peer, under a time limit of its own (coreutils `timeout`): a
    probe that gives up here stops there too, whatever the peer's sshd does with signals."""
    return f"timeout -k {REMOTE_GRACE} {host.timeout:g} {host.swarmdeck} probe --json"


def parse_probe_output(text: str) -> tuple[dict[str, Any], list[Any]]:
    """The peer's own host object from its snapshot JSON, and its `gpus` rows."""
    try:
        snapshot = json.loads(text)
    except ValueError as error:
        raise PeerNotRead(f"bad JSON from the peer: {error}") from None
    hosts = snapshot.get("hosts") if isinstance(snapshot, dict) else None
    if not isinstance(hosts, list) or not hosts or not isinstance(hosts[0], dict):
        raise PeerNotRead("bad JSON from the peer: no hosts[0] object")
    gpus = snapshot.get("gpus")
    return hosts[0], gpus if isinstance(gpus, list) else []


def _first_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[0] if lines else ""


def reason_of(error: BaseException, timeout: float) -> str:
    """One line a person can act on, for whatever stopped the reading."""
    if isinstance(error, PeerNotRead):
        return str(error)
    if isinstance(error, asyncssh.HostKeyNotVerifiable):
        return f"host key not trusted: {error.reason}"
    if isinstance(error, TimeoutError | asyncio.TimeoutError):
        return f"timed out after {timeout:g} s"
    if isinstance(error, ConnectionRefusedError):
        return "connection refused"
    if isinstance(error, asyncssh.PermissionDenied):
        return f"login refused: {error.reason}"
    if isinstance(error, asyncssh.Error):
        return f"ssh: {error.reason}"
    return f"{type(error).__name__}: {_first_line(str(error)) or 'no message'}"


async def open_connection(host: HostConfig) -> asyncssh.SSHClientConnection:
    """A new connection to the peer, its host key checked against `known_hosts_file(host)`.

    Raises PeerNotRead when no known_hosts file exists (nothing is contacted then), and
    asyncssh's errors (HostKeyNotVerifiable, PermissionDenied, …) as they come; `reason_of`
    turns any of them into one line.
    """
    known = known_hosts_file(host)
    if not os.path.isfile(known):
        raise PeerNotRead(f"host key not checkable: no known_hosts file {known}")
    options: dict[str, Any] = {}
    if host.identity:
        options["client_keys"] = [os.path.expanduser(host.identity)]
    return await asyncssh.connect(
        host.address,
        host.port,
        username=host.user or getpass.getuser(),
        known_hosts=None if broken("no-host-key") else known,
        connect_timeout=host.timeout,
        **options,
    )


class PeerProber:
    """Owns an event loop in a background thread and one SSH connection per peer.

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
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="swarmdeck-peers", daemon=True
        )
        self._thread.start()
        self._connections: dict[str, tuple[tuple[object, ...], asyncssh.SSHClientConnection]] = {}
        self._latest: dict[str, PeerReading] = {}
        self._round: Future[list[PeerReading]] | None = None

    def read_all(self, config: Config) -> list[PeerReading]:
        """Every configured peer (the enabled ones read at once); each reading is cached."""
        if self._wait:
            return self._call(self._read_all(config.hosts))
        if self._round is None or self._round.done():
            self._round = asyncio.run_coroutine_threadsafe(
                self._read_all(config.hosts), self._loop
            )
        return [self._latest_of(host) for host in config.hosts]

    def _latest_of(self, host: HostConfig) -> PeerReading:
        if not host.enabled:
            return PeerReading(host.name, DISABLED, reason="enabled = false")
        held = self._latest.get(host.name)
        return held or PeerReading(host.name, NOT_READ, reason="reading…")

    @property
    def running(self) -> bool:
        """Whether the prober can still read (it has not been closed)."""
        return self._thread.is_alive()

    def close(self) -> None:
        """Close every connection and stop the loop; the prober cannot be used after."""
        if not self._thread.is_alive():
            return
        self._call(self._close_all())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)
        self._loop.close()

    def _call(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result()

    async def _read_all(self, hosts: tuple[HostConfig, ...]) -> list[PeerReading]:
        readings = list(await asyncio.gather(*(self._read(host) for host in hosts)))
        for reading in readings:
            self._latest[reading.name] = reading
            if reading.state != DISABLED:
                write_reading(reading)
        return readings

    async def _read(self, host: HostConfig) -> PeerReading:
        if not host.enabled:
            await self._drop(host.name)
            return PeerReading(host.name, DISABLED, reason="enabled = false")
        try:
            figures, gpus = await asyncio.wait_for(self._probe(host), host.timeout)
        except Exception as error:  # every failure is this host's "not read", with its reason
            await self._drop(host.name)
            return PeerReading(
                host.name, NOT_READ, reason=reason_of(error, host.timeout), read_at=time.time()
            )
        return reading_of(host.name, figures, time.time(), gpus)

    async def _probe(self, host: HostConfig) -> tuple[dict[str, Any], list[Any]]:
        connection = await self._connection(host)
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
            why = _first_line(stderr)
            status = (
                "closed without an exit status"
                if exit_status is None
                else "its own time limit stopped it"
                if exit_status == TIMEOUT_EXIT
                else f"exit {exit_status}"
            )
            raise PeerNotRead(f"remote {status}" + (f": {why}" if why else ""))
        return parse_probe_output(stdout)

    async def _connection(self, host: HostConfig) -> asyncssh.SSHClientConnection:
        known = known_hosts_file(host)
        key = (host.address, host.port, host.user, known, host.identity)
        held = self._connections.get(host.name)
        if held is not None and held[0] == key and not held[1].is_closed():
            return held[1]
        await self._drop(host.name)
        connection = await open_connection(host)
        self._connections[host.name] = (key, connection)
        return connection

    async def _drop(self, name: str) -> None:
        held = self._connections.pop(name, None)
        if held is not None:
            held[1].close()
            await held[1].wait_closed()

    async def _close_all(self) -> None:
        """Stop a round still reading (a background one), then close every connection."""
        others = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
        for task in others:
            task.cancel()
        await asyncio.gather(*others, return_exceptions=True)
        for name in list(self._connections):
            await self._drop(name)
        await asyncio.sleep(0.01)  # lets the closed transports run their last callbacks
