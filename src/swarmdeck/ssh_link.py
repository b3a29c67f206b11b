"""The SSH link to configured peers: one asyncio loop in a thread of its own, one kept-alive
asyncssh connection per peer, and one way to call into them from synchronous code.

The peer probe (probes/peer.py) and peer runs (actions/hosts/ssh.py) each hold a link of their
own, so a probe that drops a peer's connection never cuts a run's channels. Host keys are always
verified: against the host's known_hosts file, else ~/.ssh/known_hosts. asyncssh is imported by
this module and its two users only; the hook path reads the probe's cache (probes/peer_cache.py).
"""

from __future__ import annotations

import asyncio
import getpass
import os
import threading
from collections.abc import Coroutine
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, TypeVar

import asyncssh

from swarmdeck.breaks import broken

if TYPE_CHECKING:
    from swarmdeck.config import HostConfig

T = TypeVar("T")


class PeerNotRead(Exception):
    """A peer that did not give usable figures; the message is the one-line reason."""


def known_hosts_file(host: HostConfig) -> str:
    """The known_hosts file that must vouch for the peer's key; never "trust anything"."""
    return os.path.expanduser(host.known_hosts or os.path.join("~", ".ssh", "known_hosts"))


def first_line(text: str) -> str:
    """The first line of `text` that is not blank, stripped; "" when there is none."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[0] if lines else ""


def reason_of(error: BaseException, timeout: float) -> str:
    """One line a person can act on, for whatever stopped a call to the peer."""
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
    return f"{type(error).__name__}: {first_line(str(error)) or 'no message'}"


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


def _identity(host: HostConfig) -> tuple[object, ...]:
    """What a held connection must have been opened with to serve `host` as configured now."""
    return (host.address, host.port, host.user, known_hosts_file(host), host.identity)


class SshLink:
    """An event loop in a background thread and the connections made on it, one per peer name.

    `call` and `submit` are the way in from other threads; the `async` methods run on the loop.
    A connection that failed is dropped (`drop`, closing it) or forgotten (`forget`, leaving
    its open channels be) and made again by the next `connection`.
    """

    def __init__(self, thread_name: str) -> None:
        """Args:
            thread_name: The loop thread's name (what `ps -T` and a debugger show).
        """
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name=thread_name, daemon=True
        )
        self._thread.start()
        self._connections: dict[str, tuple[tuple[object, ...], asyncssh.SSHClientConnection]] = {}

    @property
    def running(self) -> bool:
        """Whether the link can still be called (it has not been closed)."""
        return self._thread.is_alive()

    def call(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run `coroutine` on the loop and wait for its result. An exception raised while
        waiting (a signal handler's) cancels the coroutine there and propagates."""
        future = asyncio.run_coroutine_threadsafe(coroutine, self._loop)
        try:
            return future.result()
        except BaseException:
            future.cancel()
            raise

    def submit(self, coroutine: Coroutine[Any, Any, T]) -> Future[T]:
        """Start `coroutine` on the loop without waiting for it."""
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop)

    async def connection(self, host: HostConfig) -> asyncssh.SSHClientConnection:
        """The peer's open connection, made anew when there is none, it closed, or the host's
        address, user, key or known_hosts changed since it was made."""
        identity = _identity(host)
        held = self._connections.get(host.name)
        if held is not None and held[0] == identity and not held[1].is_closed():
            return held[1]
        await self.drop(host.name)
        connection = await open_connection(host)
        self._connections[host.name] = (identity, connection)
        return connection

    async def drop(self, name: str) -> None:
        """Close the peer's connection (and every channel on it) and wait until it is closed."""
        held = self._connections.pop(name, None)
        if held is not None:
            held[1].close()
            await held[1].wait_closed()

    def forget(self, name: str) -> None:
        """Stop using the peer's connection (it failed); the next `connection` makes another.
        It is not closed: channels still open on it (a started job's) stay theirs to end."""
        self._connections.pop(name, None)

    async def abort(self, name: str) -> None:
        """Cut the peer's connection as a network failure would, and forget it."""
        held = self._connections.pop(name, None)
        if held is not None:
            held[1].abort()

    def close(self) -> None:
        """Stop what still runs on the loop, close every connection, end the thread; the link
        cannot be used after."""
        if not self._thread.is_alive():
            return
        self.call(self._close_all())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)
        self._loop.close()

    async def _close_all(self) -> None:
        others = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
        for task in others:
            task.cancel()
        await asyncio.gather(*others, return_exceptions=True)
        for name in list(self._connections):
            await self.drop(name)
        await asyncio.sleep(0.01)  # lets the closed transports run their last callbacks
