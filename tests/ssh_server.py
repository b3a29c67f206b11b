"""The demo's loopback SSH server on 127.0.0.1 with the modes peer tests need: it runs our real
`swarmdeck probe --json` in a subprocess (this venv's bin first on PATH, the peer's own state
and config in tmp_path), or any command with its input and output streamed both ways ("shell",
as sshd does), or accepts the command and never answers ("hang"). It serves SFTP on the real
filesystem."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import asyncssh
import pytest

from swarmdeck.demo.loopback import LoopbackSshServer


@dataclass
class Command:
    """One command "shell" mode was sent; answered once it has ended there."""

    text: str
    answered: bool = False


class SshServer(LoopbackSshServer):
    """The demo's loopback server with test modes: "probe" runs the command and answers once it
    ended, "shell" streams it both ways (the loopback server's own way), "answer" writes
    `answer` without running anything, "hang" accepts it and never answers."""

    def __init__(self, tmp_path: Path, mode: str = "probe", answer: str = "") -> None:
        self.mode = mode
        self.answer = answer
        """What "answer" mode writes for any command, without running anything."""
        self.answer_delay = 0.0
        """Seconds "answer" mode waits first: the time a real peer spends on its own cores."""
        self.commands: list[Command] = []
        """Every command "shell" mode was sent, in order."""
        self.hold: Callable[[str], bool] = lambda command: False
        """In "shell" mode a command for which this is true waits until it turns false: the
        moment a loaded peer gets round to answering it."""
        # The peer's config exists, empty (the defaults) until a test writes its own.
        (tmp_path / "peer-config.toml").touch()
        super().__init__(
            tmp_path,
            env={
                "SWARMDECK_STATE_DIR": str(tmp_path / "peer-state"),
                "SWARMDECK_CONFIG": str(tmp_path / "peer-config.toml"),
                "SWARMDECK_RUN_DIR": str(tmp_path / "peer-run"),
            },
        )
        self.release: asyncio.Event = self._call(self._event())

    async def _event(self) -> asyncio.Event:
        return asyncio.Event()

    async def _serve(self, process: asyncssh.SSHServerProcess) -> None:
        if self.mode == "shell":
            command = Command(process.command or "")
            self.commands.append(command)
            while self.hold(command.text):
                await asyncio.sleep(0.02)
            try:
                await super()._serve(process)
            finally:
                command.answered = True
            return
        if self.mode == "hang":
            await self.release.wait()
            process.exit(0)
            return
        if self.mode == "answer":
            await asyncio.sleep(self.answer_delay)
            process.stdout.write(self.answer.encode())
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
        process.stdout.write(out)
        process.stderr.write(err)
        process.exit(proc.returncode if proc.returncode is not None else 255)
        await process.wait_closed()

    def drop_connections(self) -> None:
        """Close every connection from the server's side, as a restarted peer would."""

        async def drop() -> None:
            for conn in self.open:
                conn.close()
                await conn.wait_closed()

        self._call(drop())

    def stop(self) -> None:
        if not self.loop.is_closed():
            self.loop.call_soon_threadsafe(self.release.set)
        super().stop()


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
