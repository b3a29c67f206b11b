"""`swarmdeck peer run|check|cleanup` against a real SSH server on 127.0.0.1 (asyncssh's, with
a generated host key and key authentication) that runs the same installed swarmdeck in a peer
root of the test's own."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from peerkit import start_peer

from ssh_server import servers as servers
from swarmdeck.cli import main
from swarmdeck.state import StateStore


def peer_rows(host: str = "box2") -> list[dict]:
    store = StateStore.open_default()
    try:
        with store.read() as conn:
            rows = conn.execute("SELECT * FROM jobs WHERE host = ? ORDER BY id", (host,))
            return [dict(row) for row in rows.fetchall()]
    finally:
        store.close()


def test_full_peer_run_brings_its_artifact_back_and_leaves_nothing(
    tmp_path: Path, servers, v1_slice: Path, monkeypatch: pytest.MonkeyPatch, capfd
) -> None:
    peer = start_peer(tmp_path, servers, v1_slice)
    monkeypatch.chdir(peer.work)
    code = main([
        "peer", "run", "box2", "--label", "art", "--fetch", "out/result.txt", "--",
        "sh", "-c", "sh job.sh; mkdir out; cat src/data.txt > out/result.txt; uname -n",
    ])
    out, err = capfd.readouterr()
    assert code == 0, err
    assert "hello from <box2>" in out
    assert os.uname().nodename not in out
    assert (peer.work / "out" / "result.txt").read_text() == "payload\n"
    assert list(peer.run_root.iterdir()) == []
    [row] = peer_rows()
    assert (row["state"], row["exit_code"]) == ("done", 0)
    assert row["run_dir"].startswith(str(peer.run_root)) and row["pid"] and row["start_ticks"]
