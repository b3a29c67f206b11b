"""The hook path imports neither textual nor asyncssh (nor rich); the light path not even config."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from claude_lines import bash_payload, hook_payload

SWARMDECK = Path(sys.executable).parent / "swarmdeck"

NEVER = {"textual", "asyncssh", "rich"}


def _modules(event: str, payload: dict) -> set[str]:
    """Every module the real console script imports, from `python -X importtime`'s report."""
    env = dict(os.environ)
    done = subprocess.run(
        [sys.executable, "-X", "importtime", str(SWARMDECK), "hook", event],
        input=json.dumps(payload).encode(),
        capture_output=True,
        env=env,
        timeout=60,
        check=True,
    )
    names = set()
    for line in done.stderr.decode().splitlines():
        if line.startswith("import time:") and "|" in line:
            name = line.rsplit("|", 1)[1].strip()
            if name != "imported package":
                names.add(name)
    assert "swarmdeck.hooks.entry" in names
    return {name.split(".")[0] for name in names} | names


def test_light_path_imports_only_what_it_needs() -> None:
    first = _modules("pre-tool-use", bash_payload("ls -la"))
    assert "swarmdeck.config" in first  # the first call builds the settings cache and the store
    modules = _modules("pre-tool-use", bash_payload("ls -la"))
    assert not modules & NEVER
    assert "swarmdeck.config" not in modules
    assert "swarmdeck.state" not in modules
    assert "dataclasses" not in modules
    assert "pathlib" not in modules
    assert "typing" not in modules


def test_heavy_and_session_start_paths_import_no_ui_or_ssh() -> None:
    heavy = _modules("pre-tool-use", bash_payload("pytest -q"))
    start = _modules("session-start", hook_payload("SessionStart", source="compact"))
    guard = _modules(
        "pre-tool-use",
        hook_payload("PreToolUse", tool_name="Agent", tool_input={"prompt": "p"}),
    )
    assert "swarmdeck.hooks.bash_reminder" in heavy
    assert "swarmdeck.hooks.session_start" in start
    for modules in (heavy, start, guard):
        assert not modules & NEVER
        assert not modules & WHOLE_CLAUDE_CLUSTER
    assert not {name for name in heavy if name.startswith("swarmdeck.probes.claude.")}


WHOLE_CLAUDE_CLUSTER = {
    "swarmdeck.probes.claude.sessions_watch",
    "watchfiles",
}
"""Parts of probes/claude/ only the app needs: a hook importing them has pulled in the cluster."""
