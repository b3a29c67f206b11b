"""Run the real `swarmdeck hook EVENT` console script as Claude Code does: JSON on stdin."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

SWARMDECK = Path(sys.executable).parent / "swarmdeck"


@dataclass
class HookRun:
    """What one hook call did."""

    returncode: int
    stdout: str
    stderr: str

    @property
    def answer(self) -> dict[str, Any] | None:
        return json.loads(self.stdout) if self.stdout.strip() else None

    @property
    def context(self) -> str:
        answer = self.answer or {}
        return answer.get("hookSpecificOutput", {}).get("additionalContext", "")


@pytest.fixture(scope="session")
def bytecode_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Compiled modules shared by every hook call of the run, as an installed package has."""
    return tmp_path_factory.mktemp("pycache")


@pytest.fixture
def run_hook(bytecode_dir: Path):
    def run(event: str, payload: dict[str, Any] | bytes | str, timeout: float = 30) -> HookRun:
        if isinstance(payload, dict):
            data = json.dumps(payload).encode()
        elif isinstance(payload, str):
            data = payload.encode()
        else:
            data = payload
        env = dict(os.environ)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(bytecode_dir)
        done = subprocess.run(
            [str(SWARMDECK), "hook", event],
            input=data,
            capture_output=True,
            env=env,
            timeout=timeout,
            check=False,
        )
        return HookRun(done.returncode, done.stdout.decode(), done.stderr.decode(errors="replace"))

    return run
