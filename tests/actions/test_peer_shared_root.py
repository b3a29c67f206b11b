"""Two ledgers (two state folders) running on one peer with one shared run root: each one's
`peer cleanup` removes only its own ledger's run copies, and never one a live run uses, though
job ids start at 1 in every ledger and labels repeat."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from cagekit import SWARMDECK
from peerkit import start_peer

from ssh_server import servers as servers
from swarmdeck.cli import main
from waiting import wait_for


def _ledger(tmp_path: Path, name: str) -> dict[str, str]:
    """The environment of a second ledger: its own state folder, the same config and peer."""
    return {**os.environ, "SWARMDECK_STATE_DIR": str(tmp_path / name)}


def _live_run(peer, env: dict[str, str], tmp_path: Path) -> tuple[subprocess.Popen, Path, Path]:
    """A `peer run --label pytest` of the ledger in `env`, running until `go` exists; its
    driver, the file its remote shell writes its pid to, and `go`."""
    pids, go = tmp_path / "b-pids", tmp_path / "go"
    script = (f"echo $$ > '{pids}'; while [ ! -e '{go}' ]; do sleep 0.05; done;"
              " echo r > result.txt")
    driver = subprocess.Popen(
        [SWARMDECK, "peer", "run", "box2", "--label", "pytest", "--fetch", "result.txt", "--",
         "sh", "-c", script],
        cwd=peer.work, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    wait_for(lambda: pids.exists() and pids.read_text().strip() != "", timeout=60)
    return driver, pids, go


def _finish(driver: subprocess.Popen, go: Path) -> tuple[int, str]:
    go.touch()
    try:
        code = driver.wait(timeout=120)
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait()
    assert driver.stderr is not None and driver.stdout is not None
    err = driver.stderr.read().decode(errors="replace")
    driver.stdout.close()
    driver.stderr.close()
    return code, err


def test_cleanup_leaves_another_ledgers_live_run_of_the_same_label_and_id(
    tmp_path: Path, servers, v1_slice: Path, monkeypatch: pytest.MonkeyPatch, capfd
) -> None:
    peer = start_peer(tmp_path, servers, v1_slice)
    monkeypatch.chdir(peer.work)
    # Ledger A ran `pytest` as its job 1, which ended and removed its copy.
    assert main(["peer", "run", "box2", "--label", "pytest", "--", "true"]) == 0
    # Ledger B runs `pytest` as its job 1 too, in the same run root.
    driver, _, go = _live_run(peer, _ledger(tmp_path, "b-state"), tmp_path)
    try:
        [copy] = list(peer.run_root.iterdir())
        capfd.readouterr()
        assert main(["peer", "cleanup", "box2"]) == 0
        out = capfd.readouterr().out
        assert copy.is_dir(), f"ledger A's cleanup removed ledger B's running copy: {out}"
        assert "no runs on box2 without their driver" in out
    finally:
        code, err = _finish(driver, go)
    assert code == 0, err
    assert (peer.work / "result.txt").read_text() == "r\n"
    assert list(peer.run_root.iterdir()) == []


def test_cleanup_never_removes_a_copy_a_live_run_uses_even_of_its_own_ledger(
    tmp_path: Path, servers, v1_slice: Path, monkeypatch: pytest.MonkeyPatch, capfd
) -> None:
    """A state folder copied whole (cp -a) holds the same ledger: its copies carry the same
    ledger identity and ids. Ledger A's job 2 ended; the copy's job 2 runs: A's cleanup finds
    a copy of its name and leaves it, since the shell that runs in it is alive."""
    peer = start_peer(tmp_path, servers, v1_slice)
    monkeypatch.chdir(peer.work)
    assert main(["peer", "run", "box2", "--label", "pytest", "--", "true"]) == 0
    shutil.copytree(tmp_path / "state", tmp_path / "copied-state")
    assert main(["peer", "run", "box2", "--label", "pytest", "--", "true"]) == 0
    driver, _, go = _live_run(peer, _ledger(tmp_path, "copied-state"), tmp_path)
    try:
        [copy] = list(peer.run_root.iterdir())
        capfd.readouterr()
        assert main(["peer", "cleanup", "box2"]) == 0
        out = capfd.readouterr().out
        assert copy.is_dir(), f"the cleanup removed a copy a live run uses: {out}"
        assert "in use" in out and copy.name in out, out
    finally:
        code, err = _finish(driver, go)
    assert code == 0, err
    assert list(peer.run_root.iterdir()) == []
