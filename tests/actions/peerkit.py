"""A peer for peer-run tests: the asyncssh server in "shell" mode on 127.0.0.1 running the real
`swarmdeck` of this venv, with a caged slice of the test's own, and a git checkout to copy."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cagekit import MIB, write_config

from ssh_server import write_peer_config


@dataclass
class Peer:
    server: Any
    """An SshServer (asyncssh's) or an OpenSshServer."""
    run_root: Path
    work: Path


def git_checkout(work: Path, files: dict[str, str]) -> Path:
    """A git checkout whose files are all staged (what `git ls-files` lists)."""
    work.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    for name, text in files.items():
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_text(text)
    subprocess.run(["git", "-C", str(work), "add", "-A"], check=True)
    return work


def start_peer(tmp_path: Path, start, v1_slice: Path, extra_host: str = "",
               extra: str = "") -> Peer:
    """The peer "box2" on asyncssh's server with its own state, config and slice; this side's
    config names it."""
    return peer_on(tmp_path, start("shell"), v1_slice, extra_host, extra)


def peer_on(tmp_path: Path, server: Any, v1_slice: Path, extra_host: str = "",
            extra: str = "") -> Peer:
    """The peer "box2" on a started server (asyncssh's or OpenSSH's)."""
    write_config(tmp_path / "peer-config.toml", v1_slice, 512 * MIB, default_prediction="64M")
    known = server.known_hosts(tmp_path / "known_hosts")
    write_peer_config(tmp_path, server, known, extra)
    run_root = tmp_path / "peer root"
    command = server.swarmdeck_command(tmp_path) if hasattr(server, "swarmdeck_command") else ""
    with (tmp_path / "config.toml").open("a") as config:
        config.write(f'run_root = "{run_root}"\ntoolchains = ["git --version"]\n' + extra_host)
        if command:
            config.write(f"swarmdeck = {json.dumps(command)}\n")
    work = git_checkout(tmp_path / "work", {"job.sh": "echo hello from $(uname -n)\n",
                                            "src/data.txt": "payload\n"})
    return Peer(server, run_root, work)
