"""A real asyncssh server on 127.0.0.1 for peer tests: it runs our real `swarmdeck probe
--json` in a subprocess (this venv's bin first on PATH, the peer's own state and config in
tmp_path), or any command with its input and output streamed both ways ("shell", as sshd does),
or accepts the command and never answers ("hang"). It serves SFTP on the real filesystem."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

import asyncssh
import pytest

BIN = str(Path(sys.executable).parent)


class SshServer:
    """asyncssh's server in a thread of its own; counts connections; "probe" runs the command
    and answers once it ended, "shell" streams it, "answer" writes `answer` without running
    anything, "hang" accepts it and never answers."""

    def __init__(self, tmp_path: Path, mode: str = "probe", answer: str = "") -> None:
        self.mode = mode
        self.answer = answer
        """What "answer" mode writes for any command, without running anything."""
        self.answer_delay = 0.0
        """Seconds "answer" mode waits first: the time a real peer spends on its own cores."""
        self.connections = 0
        self.active = 0
        self.children: list[asyncio.subprocess.Process] = []
        self.open: list[asyncssh.SSHServerConnection] = []
        self.host_key = asyncssh.generate_private_key("ssh-ed25519")
        self.client_key = asyncssh.generate_private_key("ssh-ed25519")
        self.identity = tmp_path / "id_client"
        self.client_key.write_private_key(str(self.identity))
        self.env = dict(os.environ)
        self.env["PATH"] = BIN + os.pathsep + self.env.get("PATH", "")
        self.env["SWARMDECK_STATE_DIR"] = str(tmp_path / "peer-state")
        self.env["SWARMDECK_CONFIG"] = str(tmp_path / "peer-config.toml")
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.release = self._call(self._event())
        self.acceptor = self._call(self._start())
        self.port: int = self.acceptor.get_port()

    def _call(self, coroutine: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout=10)

    async def _event(self) -> asyncio.Event:
        return asyncio.Event()

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
            encoding=None if self.mode == "shell" else "utf-8",
        )

    async def _handle(self, process: asyncssh.SSHServerProcess) -> None:
        self.active += 1
        try:
            await self._serve(process)
        finally:
            self.active -= 1

    async def _serve(self, process: asyncssh.SSHServerProcess) -> None:
        if self.mode == "hang":
            await self.release.wait()
            process.exit(0)
            return
        if self.mode == "shell":
            await self._stream(process)
            return
        if self.mode == "answer":
            await asyncio.sleep(self.answer_delay)
            process.stdout.write(self.answer)
            process.exit(0)
            await process.wait_closed()
            return
        proc = await asyncio.create_subprocess_shell(
            process.command,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
            env=self.env,
        )
        self.children.append(proc)
        # All output is read before the exit status is sent, so a command that exits at once
        # cannot race its own output (a redirect may still be copying when exit() is called).
        out, err = await proc.communicate()
        process.stdout.write(out.decode(errors="replace"))
        process.stderr.write(err.decode(errors="replace"))
        process.exit(proc.returncode if proc.returncode is not None else 255)
        await process.wait_closed()

    async def _stream(self, process: asyncssh.SSHServerProcess) -> None:
        """Input and output copied both ways as they come; the exit status only after all
        output was passed on. A connection that goes away takes its command's group with it."""
        proc = await asyncio.create_subprocess_shell(
            process.command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
            env=self.env,
        )
        self.children.append(proc)

        async def pump_in() -> None:
            try:
                while data := await process.stdin.read(1 << 16):
                    proc.stdin.write(data)
                    await proc.stdin.drain()
            except (asyncssh.Error, OSError, BrokenPipeError):
                pass
            finally:
                proc.stdin.close()

        async def pump_out(source: asyncio.StreamReader, sink: Any) -> None:
            while data := await source.read(1 << 16):
                sink.write(data)

        feeding = asyncio.ensure_future(pump_in())
        try:
            await asyncio.gather(pump_out(proc.stdout, process.stdout),
                                 pump_out(proc.stderr, process.stderr))
            code = await proc.wait()
            process.exit(code if code >= 0 else 128 - code)
        except (asyncssh.Error, OSError, BrokenPipeError):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            await proc.wait()
        finally:
            feeding.cancel()

    def drop_connections(self) -> None:
        """Close every connection from the server's side, as a restarted peer would."""

        async def drop() -> None:
            for conn in self.open:
                conn.close()
                await conn.wait_closed()

        self._call(drop())

    def known_hosts(self, path: Path, key: asyncssh.SSHKey | None = None) -> Path:
        public = (key or self.host_key).export_public_key().decode().strip()
        path.write_text(f"[127.0.0.1]:{self.port} {public}\n")
        return path

    def stop(self) -> None:
        async def close() -> None:
            self.release.set()
            self.acceptor.close()
            await self.acceptor.wait_closed()
            for conn in self.open:
                conn.close()
                await conn.wait_closed()
            deadline = time.monotonic() + 5
            while self.active and time.monotonic() < deadline:  # a handler may still be starting
                for child in self.children:
                    if child.returncode is None:
                        with contextlib.suppress(ProcessLookupError):
                            os.killpg(child.pid, signal.SIGKILL)
                await asyncio.sleep(0.02)
            for child in self.children:
                await child.wait()

        self._call(close())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=5)
        self.loop.close()


@pytest.fixture
def servers(tmp_path: Path):
    """Start SshServers in the test; every one is stopped at the end."""
    started: list[SshServer] = []

    def start(mode: str = "probe") -> SshServer:
        server = SshServer(tmp_path, mode)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


def write_peer_config(tmp_path: Path, server: SshServer, known: Path, extra: str = "") -> None:
    """This side's config.toml: `extra` first, then one [[hosts]] entry "box2" for the server."""
    (tmp_path / "config.toml").write_text(
        extra + "[[hosts]]\n"
        'name = "box2"\n'
        'address = "127.0.0.1"\n'
        f"port = {server.port}\n"
        f'known_hosts = "{known}"\n'
        f'identity = "{server.identity}"\n'
        "timeout = 8.0\n"
    )
