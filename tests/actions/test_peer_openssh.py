"""Peer runs against the system's OpenSSH sshd on 127.0.0.1 (its own config, host key and port;
key authentication; host-key checking on), so what works against asyncssh's server also works
against the server real peers run."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

import asyncssh
import pytest
from cagekit import SWARMDECK, hog
from peerkit import peer_on

from openssh_server import openssh as openssh
from swarmdeck.cli import main
from swarmdeck.probes.procs import read_stat


def test_check_over_openssh_says_usable(tmp_path: Path, openssh, v1_slice: Path, capfd) -> None:
    peer_on(tmp_path, openssh, v1_slice)
    assert main(["peer", "check", "box2"]) == 0, capfd.readouterr().err
    assert "host key verified" in capfd.readouterr().out


def test_full_run_with_an_artifact_over_openssh(
    tmp_path: Path, openssh, v1_slice: Path, monkeypatch: pytest.MonkeyPatch, capfd
) -> None:
    peer = peer_on(tmp_path, openssh, v1_slice)
    monkeypatch.chdir(peer.work)
    code = main(["peer", "run", "box2", "--label", "a 'b' $(c)", "--fetch", "out/r.txt", "--",
                 "sh", "-c", "sh job.sh; mkdir out; cp src/data.txt out/r.txt"])
    out, err = capfd.readouterr()
    assert code == 0, err
    assert "hello from <box2>" in out
    assert (peer.work / "out" / "r.txt").read_text() == "payload\n"
    assert list(peer.run_root.iterdir()) == []


@pytest.mark.parametrize("status", [7, 250])
def test_exit_codes_pass_through_openssh(
    tmp_path: Path, openssh, v1_slice: Path, monkeypatch: pytest.MonkeyPatch, status: int
) -> None:
    peer = peer_on(tmp_path, openssh, v1_slice)
    monkeypatch.chdir(peer.work)
    command = ["--", "sh", "-c", "exit 7"] if status == 7 else ["--cap", "64M", "--", *hog(200)]
    assert main(["peer", "run", "box2", *command]) == status
    assert list(peer.run_root.iterdir()) == []


def test_a_wrong_host_key_is_refused_by_openssh_peer(
    tmp_path: Path, openssh, v1_slice: Path, monkeypatch: pytest.MonkeyPatch, capfd
) -> None:
    peer = peer_on(tmp_path, openssh, v1_slice)
    openssh.known_hosts(tmp_path / "known_hosts", asyncssh.generate_private_key("ssh-ed25519"))
    monkeypatch.chdir(peer.work)
    assert main(["peer", "run", "box2", "--", "true"]) == 78
    assert "host key not trusted" in capfd.readouterr().err
    assert not peer.run_root.exists()


def test_term_stops_the_remote_tree_over_openssh(
    tmp_path: Path, openssh, v1_slice: Path
) -> None:
    from test_peer_run import wait_for

    peer = peer_on(tmp_path, openssh, v1_slice)
    pids = tmp_path / "pids"
    script = f"echo $$ > '{pids}'; sleep 600 & echo $! >> '{pids}'; wait"
    driver = subprocess.Popen(
        [SWARMDECK, "peer", "run", "box2", "--", "sh", "-c", script],
        cwd=peer.work, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    wait_for(lambda: pids.exists() and len(pids.read_text().split()) == 2)
    driver.send_signal(signal.SIGTERM)
    assert driver.wait(timeout=60) == 143, driver.stderr.read().decode() if driver.stderr else ""
    for pid in (int(pid) for pid in pids.read_text().split()):
        stat = read_stat(pid)
        assert stat is None or stat.state == "Z"
    assert list(peer.run_root.iterdir()) == []
