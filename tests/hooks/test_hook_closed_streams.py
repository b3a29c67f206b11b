"""A hook whose stdout, stderr or stdin is closed or full still exits 0 without a traceback:
Claude Code may stop listening, and the agent's command must go on all the same."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from claude_lines import bash_payload

SWARMDECK = str(Path(sys.executable).with_name("swarmdeck"))


def hook_redirected(redirections: str, payload: str) -> subprocess.CompletedProcess[str]:
    """`swarmdeck hook pre-tool-use` run by a shell with `redirections` applied, the payload on
    its stdin unless the redirections close it."""
    return subprocess.run(
        ["sh", "-c", f'exec "$@" {redirections}', "sh", SWARMDECK, "hook", "pre-tool-use"],
        input=json.dumps(payload), capture_output=True, text=True, timeout=60,
    )


@pytest.mark.parametrize("redirections", [">&-", "2>&-", ">&- 2>&-", "<&-", ">/dev/full"])
@pytest.mark.parametrize("command", ["ls", "pytest -q"], ids=["light", "heavy"])
def test_a_hook_with_a_closed_or_full_stream_exits_0(redirections: str, command: str) -> None:
    done = hook_redirected(redirections, bash_payload(command))
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
