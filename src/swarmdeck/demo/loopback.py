"""A second host on this machine: asyncssh's SSH server on 127.0.0.1 with generated keys.

It runs each command it is sent in a shell, streaming input and output both ways as sshd does,
and serves SFTP on the real filesystem. Commands get the peer's own state folder and config, the
running interpreter's bin folder first on PATH (so `swarmdeck` there is this swarmdeck), and
host keys are verified as for any peer: the scene writes the server's key into a known_hosts
file of its own. `swarmdeck demo` uses it as its second host.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

import asyncssh

from swarmdeck.probes.procs import process_table

BIN = str(Path(sys.executable).parent)


class LoopbackSshServer:
    """asyncssh's server in a thread of its own, answering on 127.0.0.1 at a free port.

    Args:
        folder: where the client key, the known_hosts file and the peer's state live.
        env: extra environment for every command it runs (the peer's own settings).
    """

    def __init__(self, folder: Path, env: dict[str, str] | None = None) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.folder = folder
        self.connections = 0
        self.active = 0
        self.children: list[asyncio.subprocess.Process] = []
        self.open: list[asyncssh.SSHServerConnection] = []
        self.host_key = asyncssh.generate_private_key("ssh-ed25519")
        self.client_key = asyncssh.generate_private_key("ssh-ed25519")
        self.identity = folder / "id_client"
        self.client_key.write_private_key(str(self.identity))
        os.chmod(self.identity, 0o600)
        self.env = dict(os.environ)
        self.env["PATH"] = BIN + os.pathsep + self.env.get("PATH", "")
        self.env.update(env or {})
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.acceptor: asyncssh.SSHAcceptor = self._call(self._start())
        self.port: int = self.acceptor.get_port()

    def _call(self, coroutine: Coroutine[Any, Any, Any]) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout=10)

    async def _start(self) -> asyncssh.SSHAcceptor:
        server = self

        class Counting(asyncssh.SSHServer):
            def connection_made(self, conn: asyncssh.SSHServerConnection) -> None:
                server.connections += 1
                server.open.append(conn)

            def begin_auth(self, username: str) -> bool:
                return True

        return await asyncssh.create_server(
            Counting,
            "127.0.0.1",
            0,
            server_host_keys=[self.host_key],
            authorized_client_keys=asyncssh.import_authorized_keys(
                self.client_key.export_public_key().decode()
            ),
            process_factory=self._handle,
            sftp_factory=True,
            encoding=None,
        )

    async def _handle(self, process: asyncssh.SSHServerProcess) -> None:
        self.active += 1
        try:
            await self._serve(process)
        finally:
            self.active -= 1

    async def _serve(self, process: asyncssh.SSHServerProcess) -> None:
        """Input and output copied both ways as they come, as sshd does; the exit status only
        after all output was passed on. A connection that goes away takes its command's
        process group with it."""
        proc = await asyncio.create_subprocess_shell(
            process.command or "true",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
            env=self.env,
        )
        self.children.append(proc)
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        stdin = proc.stdin

        async def pump_in() -> None:
            try:
                while data := await process.stdin.read(1 << 16):
                    stdin.write(data)
                    await stdin.drain()
            except (asyncssh.Error, OSError):
                # The command stopped reading (it exited) or the client went away: either
                # way nothing more can be passed on, and its exit is handled below.
                pass
            finally:
                stdin.close()

        async def pump_out(source: asyncio.StreamReader, sink: Any) -> None:
            while data := await source.read(1 << 16):
                sink.write(data)

        feeding = asyncio.ensure_future(pump_in())
        try:
            await asyncio.gather(
                pump_out(proc.stdout, process.stdout), pump_out(proc.stderr, process.stderr)
            )
            code = await proc.wait()
            process.exit(code if code >= 0 else 128 - code)
        except (asyncssh.Error, OSError):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            await proc.wait()
        finally:
            feeding.cancel()

    def known_hosts(self, path: Path, key: asyncssh.SSHKey | None = None) -> Path:
        """Write a known_hosts file naming this server's host key (or `key`) at its port."""
        public = (key or self.host_key).export_public_key().decode().strip()
        path.write_text(f"[127.0.0.1]:{self.port} {public}\n")
        return path

    def host_entry(self, name: str, known_hosts: Path, timeout: float = 8.0) -> str:
        """The `[[hosts]]` table of a config that reaches this server as host `name`."""
        return (
            "[[hosts]]\n"
            f'name = "{name}"\n'
            'address = "127.0.0.1"\n'
            f"port = {self.port}\n"
            f'known_hosts = "{known_hosts}"\n'
            f'identity = "{self.identity}"\n'
            f"timeout = {timeout}\n"
        )

    def _kill_children(self) -> None:
        """Kill each command's whole session: the shell and whatever it started, in its
        process group or in one of their own (`timeout`, as a peer client runs the probe,
        makes one). One left alive would hold the command's pipes open, and their transports
        would be collected after the loop closed, complaining on the screen."""
        sessions = {child.pid for child in self.children}
        for pid, stat in process_table().items():
            if stat.session in sessions:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)

    def stop(self) -> None:
        """Close every connection, kill what its commands left running, stop the thread.

        Stopping a stopped server does nothing."""
        if self.loop.is_closed():
            return

        async def close() -> None:
            self.acceptor.close()
            await self.acceptor.wait_closed()
            for conn in self.open:
                conn.close()
                await conn.wait_closed()
            deadline = time.monotonic() + 5
            while self.active and time.monotonic() < deadline:  # a handler may still be starting
                self._kill_children()
                await asyncio.sleep(0.02)
            self._kill_children()
            for child in self.children:
                await child.wait()
                if child.stdin is not None:
                    child.stdin.close()  # a handler cancelled mid-read never closed it
            # The pipes close through callbacks of this loop: let them run before it stops, or
            # their transports are collected after it closed and complain on the screen.
            await asyncio.sleep(0.05)

        self._call(close())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=5)
        self.loop.close()
