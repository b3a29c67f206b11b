"""The demo's second host: a real SSH server on 127.0.0.1 whose host key a client verifies,
which streams a command's input and output, passes its exit status, and on stop leaves none of
its commands running."""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path

import asyncssh
import pytest

from swarmdeck.demo.loopback import LoopbackSshServer

pytestmark = pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning")
"""A transport collected after its loop closed is a traceback on the screen: an error here."""


@pytest.fixture
def server(tmp_path: Path):
    (tmp_path / "peer").mkdir()
    (tmp_path / "peer" / "config.toml").touch()
    started = LoopbackSshServer(
        tmp_path / "peer",
        env={
            "SWARMDECK_STATE_DIR": str(tmp_path / "peer" / "state"),
            "SWARMDECK_CONFIG": str(tmp_path / "peer" / "config.toml"),
            "CLAUDE_CONFIG_DIR": str(tmp_path / "peer" / "claude"),
        },
    )
    yield started
    started.stop()


async def _connect(server: LoopbackSshServer, known: Path) -> asyncssh.SSHClientConnection:
    return await asyncssh.connect(
        "127.0.0.1",
        server.port,
        known_hosts=str(known),
        client_keys=[str(server.identity)],
        username="demo",
    )


async def test_it_runs_the_peer_probe_streams_input_and_passes_exit_codes(
    server: LoopbackSshServer, tmp_path: Path
) -> None:
    known = server.known_hosts(tmp_path / "known_hosts")
    async with await _connect(server, known) as conn:
        probe = await conn.run("swarmdeck probe --json", timeout=60)
        assert probe.exit_status == 0, probe.stderr
        assert json.loads(probe.stdout)["hosts"][0]["name"]
        echoed = await conn.run("cat", input="through the tunnel\n", timeout=10)
        assert echoed.stdout == "through the tunnel\n"
        assert (await conn.run("exit 7", timeout=10)).exit_status == 7


async def test_a_wrong_host_key_is_refused(server: LoopbackSshServer, tmp_path: Path) -> None:
    other = asyncssh.generate_private_key("ssh-ed25519")
    known = server.known_hosts(tmp_path / "known_hosts", key=other)
    with pytest.raises(asyncssh.HostKeyNotVerifiable):
        await _connect(server, known)


async def _written_pid(marker: Path) -> int:
    """The pid a command wrote to `marker`, once it has (within 10 s)."""
    deadline = time.monotonic() + 10
    while not (marker.exists() and marker.read_text().strip()) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    return int(marker.read_text())


async def _first_child(server: LoopbackSshServer) -> asyncio.subprocess.Process:
    """The server's first command, once its loop has recorded it (within 10 s): on a busy
    machine the command can write its marker before the server's loop gets back to it."""
    deadline = time.monotonic() + 10
    while not server.children and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    return server.children[0]


async def test_stopping_it_ends_what_its_commands_left_running(
    server: LoopbackSshServer, tmp_path: Path
) -> None:
    known = server.known_hosts(tmp_path / "known_hosts")
    marker = tmp_path / "pid"
    conn = await _connect(server, known)
    running = await conn.create_process(f"sleep 600 & echo $! > {marker}; wait")
    pid = await _written_pid(marker)
    await asyncio.to_thread(server.stop)
    running.close()
    conn.close()
    assert await _gone(pid)


async def test_stopping_it_ends_what_left_its_commands_process_group(
    server: LoopbackSshServer, tmp_path: Path
) -> None:
    """`timeout` (as a peer client runs the probe) moves itself and its command into a process
    group of their own: they are still the command's session, and go with it."""
    known = server.known_hosts(tmp_path / "known_hosts")
    marker = tmp_path / "pid"
    conn = await _connect(server, known)
    running = await conn.create_process(f"timeout 600 sh -c 'echo $$ > {marker}; sleep 600'; true")
    pid = await _written_pid(marker)
    assert os.getpgid(pid) != os.getpgid((await _first_child(server)).pid)
    await asyncio.to_thread(server.stop)
    running.close()
    conn.close()
    assert await _gone(pid)


async def _gone(pid: int) -> bool:
    """Whether process `pid` is gone (or a zombie) within 10 s."""
    deadline = time.monotonic() + 10
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    return not Path(f"/proc/{pid}").exists() or _zombie(pid)


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def test_the_client_key_is_private_to_its_owner(server: LoopbackSshServer) -> None:
    assert os.stat(server.identity).st_mode & 0o077 == 0
