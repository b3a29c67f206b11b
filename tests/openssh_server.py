"""The system's OpenSSH sshd on 127.0.0.1 for peer tests: a config, host key and authorized key
of the test's own in tmp_path, on a free port, stopped (by its pid) at the end. Skips the test
when sshd is not installed or the test does not run as root."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import asyncssh
import pytest

SSHD = shutil.which("sshd") or "/usr/sbin/sshd"
BIN = str(Path(sys.executable).parent)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class OpenSshServer:
    """sshd -D in the foreground of its own process, with key authentication only."""

    def __init__(self, tmp_path: Path) -> None:
        folder = tmp_path / "sshd"
        folder.mkdir()
        self.host_key = asyncssh.generate_private_key("ssh-ed25519")
        self.client_key = asyncssh.generate_private_key("ssh-ed25519")
        host_key_file = folder / "host_key"
        self.host_key.write_private_key(str(host_key_file))
        host_key_file.chmod(0o600)
        self.identity = tmp_path / "id_client"
        self.client_key.write_private_key(str(self.identity))
        self.identity.chmod(0o600)
        authorized = folder / "authorized_keys"
        self.client_key.write_public_key(str(authorized))
        self.port = _free_port()
        config = folder / "sshd_config"
        config.write_text(
            f"ListenAddress 127.0.0.1\nPort {self.port}\nHostKey {host_key_file}\n"
            f"AuthorizedKeysFile {authorized}\nPidFile {folder / 'sshd.pid'}\n"
            "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n"
            "PermitRootLogin prohibit-password\nStrictModes no\nPubkeyAuthentication yes\n"
        )
        # sshd's compiled-in privilege-separation folder; an empty folder if it is missing.
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
        self.process = subprocess.Popen(
            [SSHD, "-D", "-e", "-f", str(config)],
            stdout=subprocess.DEVNULL, stderr=open(folder / "log", "wb"),  # noqa: SIM115
        )
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError((folder / "log").read_text()) from None
                time.sleep(0.05)

    def known_hosts(self, path: Path, key: asyncssh.SSHKey | None = None) -> Path:
        public = (key or self.host_key).export_public_key().decode().strip()
        path.write_text(f"[127.0.0.1]:{self.port} {public}\n")
        return path

    def swarmdeck_command(self, tmp_path: Path) -> str:
        """The peer's swarmdeck as its config names it: this venv's, with the peer's own state,
        config and records of slice owners (an sshd session starts with a clean environment)."""
        (tmp_path / "peer-config.toml").touch()
        return (
            f"env PATH={BIN}:/usr/bin:/bin SWARMDECK_STATE_DIR={tmp_path / 'peer-state'} "
            f"SWARMDECK_CONFIG={tmp_path / 'peer-config.toml'} "
            f"SWARMDECK_RUN_DIR={tmp_path / 'peer-run'} {BIN}/swarmdeck"
        )

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@pytest.fixture
def openssh(tmp_path: Path):
    """A started OpenSshServer, or the test skipped saying why."""
    if not os.path.exists(SSHD):
        pytest.skip("OpenSSH sshd is not installed (.ci/run installs openssh-server)")
    if os.geteuid() != 0:
        pytest.skip("sshd with a config of its own needs root")
    server = OpenSshServer(tmp_path)
    yield server
    server.stop()
