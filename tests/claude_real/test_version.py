"""The pinned Claude Code is the one installed (`make claude-code`); without it, the one line
that says the tier is skipped."""

from __future__ import annotations

import subprocess

import pytest
from claude_rig import BINARY, VERSION, missing_reason


def test_the_pinned_claude_code_is_installed() -> None:
    reason = missing_reason()
    if reason is not None:
        pytest.skip(reason)
    done = subprocess.run([str(BINARY), "--version"], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.stdout.split()[:1] == [VERSION], done.stdout + done.stderr
