"""The peer probe against a real asyncssh server on 127.0.0.1 that runs our real
`swarmdeck probe --json` in a subprocess, with host-key checking on."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import asyncssh
import pytest

from claude_lines import bash_payload
from ssh_server import servers as servers
from ssh_server import write_peer_config
from swarmdeck.config import load_config
from swarmdeck.probes.peer import PeerProber
from swarmdeck.probes.peer_cache import cache_path, current_reading, read_cached


@pytest.fixture
def prober():
    peers = PeerProber()
    yield peers
    peers.close()


def test_peer_is_read_and_its_figures_cached(tmp_path: Path, servers, prober) -> None:
    server = servers()
    write_peer_config(tmp_path, server, server.known_hosts(tmp_path / "known_hosts"))
    config = load_config()
    [reading] = prober.read_all(config)
    assert reading.state == "read", reading.reason
    assert reading.figures["local"] is True  # the peer's own view of itself
    for key in ("cores", "threads_free", "room", "slice_cap", "mem_available"):
        assert isinstance(reading.figures[key], int), key
    assert reading.host is not None and reading.book is not None  # parsed once, here
    assert reading.host.name == "box2" and not reading.host.local
    assert reading.book.room == reading.figures["room"]
    assert reading.book.machine_room == reading.figures["machine_room"]
    cached = json.loads(Path(cache_path("box2")).read_text())
    assert cached["state"] == "read" and cached["host"] == reading.figures
    assert current_reading("box2", config.ui.refresh_interval).state == "read"
    assert reading.to_json()["local"] is False and reading.to_json()["name"] == "box2"

    prober.read_all(config)
    assert server.connections == 1  # the connection is kept alive across reads


def run_hook(payload: dict[str, Any]) -> dict[str, Any]:
    """The real `swarmdeck hook pre-tool-use`, as Claude Code runs it: JSON on stdin."""
    done = subprocess.run(
        [str(Path(sys.executable).parent / "swarmdeck"), "hook", "pre-tool-use"],
        input=json.dumps(payload).encode(),
        capture_output=True,
        timeout=30,
        check=True,
    )
    return json.loads(done.stdout)


def test_hook_says_a_heavy_command_can_run_on_the_peer(tmp_path: Path, servers, prober) -> None:
    server = servers()
    known = server.known_hosts(tmp_path / "known_hosts")
    # This host keeps back 99% of its memory, so the command fits only on the peer.
    write_peer_config(tmp_path, server, known, extra='[memory]\nreserve = "99%"\n\n')
    [reading] = prober.read_all(load_config())
    assert reading.state == "read", reading.reason
    answer = run_hook(bash_payload("pytest -q tests", cwd=str(tmp_path)))
    text = answer["hookSpecificOutput"]["additionalContext"]
    assert re.search(r"- box2: \d+ cores · load ", text), text
    assert "memory room" in text
    assert "Conclusion: can run on box2." in text
    assert "in a checkout on box2 as: swarmdeck run --label pytest -- pytest -q tests" in text


def test_wrong_host_key_is_not_read_and_nothing_is_cached_as_read(
    tmp_path: Path, servers, prober
) -> None:
    server = servers()
    stranger = asyncssh.generate_private_key("ssh-ed25519")
    write_peer_config(tmp_path, server, server.known_hosts(tmp_path / "known_hosts", stranger))
    config = load_config()
    [reading] = prober.read_all(config)
    assert reading.state == "not read"
    assert "host key" in reading.reason
    assert reading.host is None and reading.figures == {}
    cached = read_cached("box2")
    assert cached is not None and cached.state == "not read"
    assert current_reading("box2", config.ui.refresh_interval).state == "not read"


def test_peer_that_never_answers_is_not_read_within_its_timeout(
    tmp_path: Path, servers, prober
) -> None:
    server = servers("hang")
    write_peer_config(tmp_path, server, server.known_hosts(tmp_path / "known_hosts"))
    text = (tmp_path / "config.toml").read_text().replace("timeout = 8.0", "timeout = 1.0")
    (tmp_path / "config.toml").write_text(text)
    started = time.monotonic()
    [reading] = prober.read_all(load_config())
    assert time.monotonic() - started < 6, "the configured 1 s, not the default 8 s"
    assert reading.state == "not read"
    assert reading.reason == "timed out after 1 s"


def test_disabled_peer_is_never_connected_to(tmp_path: Path, servers, prober) -> None:
    server = servers()
    write_peer_config(tmp_path, server, server.known_hosts(tmp_path / "known_hosts"))
    with (tmp_path / "config.toml").open("a") as config_file:
        config_file.write("enabled = false\n")
    [reading] = prober.read_all(load_config())
    assert reading.state == "disabled"
    assert server.connections == 0
    assert read_cached("box2") is None


def test_without_a_known_hosts_file_the_peer_is_not_read_and_not_contacted(
    tmp_path: Path, servers, prober, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = servers()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # no ~/.ssh/known_hosts there
    write_peer_config(tmp_path, server, Path(""))
    text = (tmp_path / "config.toml").read_text()
    (tmp_path / "config.toml").write_text(text.replace('known_hosts = "."\n', ""))
    [reading] = prober.read_all(load_config())
    assert reading.state == "not read"
    assert reading.reason.endswith(str(tmp_path / "home" / ".ssh" / "known_hosts"))
    assert server.connections == 0


def test_background_prober_answers_at_once_and_has_the_reading_next_round(
    tmp_path: Path, servers
) -> None:
    server = servers()
    write_peer_config(tmp_path, server, server.known_hosts(tmp_path / "known_hosts"))
    config = load_config()
    peers = PeerProber(wait=False)
    try:
        [first] = peers.read_all(config)
        assert (first.state, first.reason) == ("not read", "reading…")
        deadline = time.monotonic() + 10
        while read_cached("box2") is None and time.monotonic() < deadline:
            time.sleep(0.05)
        [second] = peers.read_all(config)
        assert second.state == "read", second.reason
    finally:
        peers.close()


def test_status_json_lists_the_peer_after_this_host(tmp_path: Path, servers, capsys) -> None:
    from swarmdeck.cli import main

    server = servers()
    write_peer_config(tmp_path, server, server.known_hosts(tmp_path / "known_hosts"))
    assert main(["status", "--json"]) == 0
    hosts = json.loads(capsys.readouterr().out)["hosts"]
    assert [(host["local"], host["state"]) for host in hosts] == [(True, "read"), (False, "read")]
    assert hosts[1]["name"] == "box2" and isinstance(hosts[1]["room"], int)


def test_status_shows_a_refusing_peer_as_not_read(tmp_path: Path, capsys) -> None:
    import socket

    from swarmdeck.cli import main

    with socket.socket() as probe:  # a port nothing listens on once this is closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    (tmp_path / "known_hosts").write_text("")
    (tmp_path / "config.toml").write_text(
        f'[[hosts]]\nname = "box9"\naddress = "127.0.0.1"\nport = {port}\n'
        f'known_hosts = "{tmp_path / "known_hosts"}"\ntimeout = 2.0\n'
    )
    assert main(["status"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "peer box9 not read: connection refused" in out


def test_a_connection_the_peer_dropped_is_made_again(tmp_path: Path, servers, prober) -> None:
    server = servers()
    write_peer_config(tmp_path, server, server.known_hosts(tmp_path / "known_hosts"))
    config = load_config()
    assert prober.read_all(config)[0].state == "read"
    server.drop_connections()
    [reading] = prober.read_all(config)
    assert reading.state == "read", reading.reason
    assert server.connections == 2


@pytest.mark.parametrize(
    ("remote", "reason"),
    [
        ("echo no such command >&2; exit 127; :", "remote exit 127: no such command"),
        ("echo", "bad JSON from the peer: "),
    ],
)
def test_peer_whose_command_fails_is_not_read_with_why(
    tmp_path: Path, servers, prober, remote: str, reason: str
) -> None:
    server = servers()
    write_peer_config(tmp_path, server, server.known_hosts(tmp_path / "known_hosts"))
    with (tmp_path / "config.toml").open("a") as config_file:
        config_file.write(f'swarmdeck = "{remote}"\n')
    [reading] = prober.read_all(load_config())
    assert reading.state == "not read"
    assert reading.reason.startswith(reason)


def test_a_probe_that_gives_up_stops_what_it_started_on_the_peer(
    tmp_path: Path, servers, prober
) -> None:
    server = servers()
    pid_file = tmp_path / "remote.pid"
    hang = tmp_path / "hang.sh"
    hang.write_text(f"#!/bin/sh\necho $$ > {pid_file}\nexec sleep 300\n")
    hang.chmod(0o755)
    write_peer_config(tmp_path, server, server.known_hosts(tmp_path / "known_hosts"))
    text = (tmp_path / "config.toml").read_text().replace("timeout = 8.0", "timeout = 1.0")
    (tmp_path / "config.toml").write_text(text + f'swarmdeck = "{hang}"\n')
    [reading] = prober.read_all(load_config())
    assert reading.state == "not read" and "timed out" in reading.reason
    pid = int(pid_file.read_text())
    deadline = time.monotonic() + 10
    while _running(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _running(pid), "the remote command outlived the probe that gave up on it"


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"
