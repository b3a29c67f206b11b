"""The real Claude Code CLI, run against a scripted Messages API in a network namespace.

`Rig` is one test's set-up: its own `CLAUDE_CONFIG_DIR` with `swarmdeck hooks install` done,
its own swarmdeck state (the autouse `isolated_home` fixture), a project folder, and the fake
API (fake_api.py) started under `unshare -n`: a namespace with only loopback, which the CLI
joins (`nsenter --net`), so neither it nor anything it runs can reach past the machine.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
VERSION = (Path(__file__).parent / "claude-code-version").read_text().strip()
BINARY = REPO / ".cache" / "claude-code" / "node_modules" / "@anthropic-ai" / (
    "claude-code-linux-x64") / "claude"
"""Where `make claude-code` (run by .ci/run) installs the pinned native binary."""
SWARMDECK = Path(sys.executable).parent / "swarmdeck"
FAKE_API = Path(__file__).parent / "fake_api.py"
API_KEY = "sk-ant-test-swarmdeck-0000"
"""The tests' own key: the fake API is the only one who sees it."""


def missing_reason() -> str | None:
    """Why the real CLI cannot run here, or None when it can."""
    if not BINARY.is_file():
        return (f"Claude Code {VERSION} not installed (`make claude-code` needs the npm"
                " registry); the real-CLI tests are skipped")
    if os.geteuid() != 0:
        return "the real-CLI tests need root (unshare -n, IS_SANDBOX=1)"
    return None


def wait_for(check: Callable[[], Any], timeout: float = 30.0, what: str = "") -> Any:
    """Poll until `check()` is truthy; its value, or AssertionError naming `what`."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or check}")
        time.sleep(0.1)


@dataclass
class Rig:
    root: Path
    rules: list[dict[str, Any]] = field(default_factory=list)
    server: subprocess.Popen[bytes] | None = None
    tmux_socket: Path | None = None

    @property
    def config_dir(self) -> Path:
        return Path(os.environ["CLAUDE_CONFIG_DIR"])

    @property
    def project(self) -> Path:
        return self.root / "project"

    @property
    def script_path(self) -> Path:
        return self.root / "api-script.json"

    @property
    def log_path(self) -> Path:
        return self.root / "api-requests.jsonl"

    def start(self) -> None:
        self.project.mkdir(exist_ok=True)
        self.config_dir.mkdir(parents=True, exist_ok=True)
        (self.root / "tmp").mkdir(exist_ok=True)
        # What a person has answered once: onboarding done, this key and this folder trusted.
        (self.config_dir / ".claude.json").write_text(json.dumps({
            "hasCompletedOnboarding": True,
            "theme": "dark",
            "customApiKeyResponses": {"approved": [API_KEY[-20:]], "rejected": []},
            "projects": {str(self.project): {"hasTrustDialogAccepted": True,
                                             "hasCompletedProjectOnboarding": True}},
        }))
        self.write_script()
        port_file = self.root / "api-port"
        self.server = subprocess.Popen(
            ["unshare", "-n", sys.executable, str(FAKE_API), str(self.script_path),
             str(self.log_path), str(port_file)],
            stdout=subprocess.DEVNULL, stderr=(self.root / "api-stderr").open("wb"),
        )
        self.port = int(wait_for(lambda: port_file.exists() and port_file.read_text(), 20,
                                 "the fake API's port"))
        done = self.swarmdeck("hooks", "install")
        assert done.returncode == 0, done.stderr

    def stop(self) -> None:
        if self.tmux_socket is not None:
            subprocess.run(["tmux", "-S", str(self.tmux_socket), "kill-server"],
                           capture_output=True, check=False)
        if self.server is not None:
            self.server.send_signal(signal.SIGTERM)
            self.server.wait(10)

    # ---- the API's side ------------------------------------------------------------------

    def script(self, *rules: dict[str, Any]) -> None:
        """Add answers (fake_api.py's rules) for the requests to come."""
        self.rules.extend(rules)
        self.write_script()

    def write_script(self) -> None:
        temporary = self.script_path.with_suffix(".tmp")
        temporary.write_text(json.dumps(self.rules))
        temporary.replace(self.script_path)

    def requests(self) -> list[dict[str, Any]]:
        """Every request the fake API received, in order."""
        if not self.log_path.exists():
            return []
        return [json.loads(line) for line in self.log_path.read_text().splitlines()]

    # ---- the client's side ---------------------------------------------------------------

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        for name in [n for n in env if n.startswith(("ANTHROPIC_", "CLAUDE_CODE_", "CLAUDECODE"))]:
            del env[name]
        env.update({
            "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{self.port}",
            "ANTHROPIC_API_KEY": API_KEY,
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "IS_SANDBOX": "1",
            "TERM": "xterm-256color",
            "TMPDIR": str(self.root / "tmp"),
            # The Bash tool runs login shells: with the machine's HOME they read its profile,
            # whose tools may write there (pyenv's rehash left a lock that hung every later
            # shell when a killed CLI cut one short). A home of the test's own has no profile.
            "HOME": str(self.root / "home"),
        })
        (self.root / "home").mkdir(exist_ok=True)
        return env

    def command(self, *args: str) -> list[str]:
        """The CLI's command line, joined to the fake API's namespace."""
        assert self.server is not None
        return ["nsenter", f"--net=/proc/{self.server.pid}/ns/net", str(BINARY), *args]

    def print_run(
        self, prompt: str, *args: str, timeout: float = 90
    ) -> subprocess.CompletedProcess[str]:
        """`claude -p PROMPT` in the project, permissions skipped (root needs IS_SANDBOX)."""
        return subprocess.run(
            self.command("-p", prompt, "--dangerously-skip-permissions", *args),
            cwd=self.project, env=self.env(), capture_output=True, text=True,
            timeout=timeout, check=False,
        )

    def doctor(self) -> str:
        """What `claude doctor` says in the project (it exits 0 whatever it finds)."""
        done = subprocess.run(
            self.command("doctor"), cwd=self.project, env=self.env(), capture_output=True,
            text=True, timeout=90, check=False, stdin=subprocess.DEVNULL,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout + done.stderr

    def swarmdeck(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(SWARMDECK), *args], capture_output=True, text=True,
                              timeout=60, check=False)

    def status(self) -> dict[str, Any]:
        done = self.swarmdeck("status", "--json")
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    def sessions(self) -> list[dict[str, Any]]:
        return self.status()["sessions"]

    def hook_events(self) -> list[tuple[str, dict[str, Any]]]:
        """(event, input) of every hook call swarmdeck recorded, the spooled ones folded in."""
        from swarmdeck import paths
        from swarmdeck.hook_events import fold
        from swarmdeck.state import StateStore

        db = Path(paths.state_db_path())
        if not db.exists():
            return []
        store = StateStore(db, verify=False)
        try:
            fold(store)
        finally:
            store.close()
        with sqlite3.connect(db) as conn:
            rows = conn.execute("SELECT event, payload FROM hook_events ORDER BY id").fetchall()
        return [(event, json.loads(payload)) for event, payload in rows]

    def events(self) -> list[str]:
        return [event for event, _ in self.hook_events()]

    def pid_files(self) -> list[dict[str, Any]]:
        folder = self.config_dir / "sessions"
        out = []
        for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
            try:
                out.append(json.loads(path.read_text()))
            except (OSError, ValueError):
                continue
        return out

    # ---- interactive, in tmux ------------------------------------------------------------

    def interactive(self, *args: str) -> None:
        """Start the CLI in a tmux session of this test's own socket."""
        self.tmux_socket = self.root / "tmux.sock"
        env = self.env()
        exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items()
                           if k.startswith(("ANTHROPIC_", "DISABLE_", "CLAUDE_", "SWARMDECK_",
                                            "XDG_", "IS_SANDBOX", "TMPDIR", "PATH")))
        line = f"env {exports} {shlex.join(self.command(*args))}"
        subprocess.run(
            ["tmux", "-S", str(self.tmux_socket), "new-session", "-d", "-x", "160", "-y", "50",
             "-c", str(self.project), line],
            env=env, check=True, timeout=20,
        )

    def screen(self) -> str:
        assert self.tmux_socket is not None
        return subprocess.run(
            ["tmux", "-S", str(self.tmux_socket), "capture-pane", "-p"], capture_output=True,
            text=True, check=False, timeout=20,
        ).stdout

    def keys(self, *keys: str) -> None:
        assert self.tmux_socket is not None
        subprocess.run(["tmux", "-S", str(self.tmux_socket), "send-keys", *keys], check=True,
                       timeout=20)

    def wait_screen(self, text: str, timeout: float = 30) -> str:
        return wait_for(lambda: text in (s := self.screen()) and s, timeout,
                        f"{text!r} on the screen")
