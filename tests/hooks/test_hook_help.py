"""What the command line says about hooks: every event by name, no command that may not exist."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from swarmdeck.cli.command_line import COMMANDS
from swarmdeck.config import HostConfig, describe_config, load_config
from swarmdeck.hooks.payload import EVENTS

SWARMDECK = Path(sys.executable).parent / "swarmdeck"


def test_hook_help_lists_every_event() -> None:
    done = subprocess.run([str(SWARMDECK), "hook", "--help"], capture_output=True, text=True,
                          timeout=30, check=True)
    for name, claude in EVENTS.items():
        assert any(line.split() == [name, claude] for line in done.stdout.splitlines()), name
    assert "…" not in done.stdout


def test_the_hosts_docs_name_only_commands_that_exist(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('[[hosts]]\nname = "b"\naddress = "x"\n')
    rows = [row for row in describe_config(load_config(path)) if row.key.startswith("hosts[")]
    assert rows and len(rows) == len(HostConfig.__dataclass_fields__)
    for row in rows:
        for command in re.findall(r"\b(?:swarmdeck )?(peer) (?:run|check|cleanup)\b", row.doc):
            assert command in COMMANDS, row
        for command in re.findall(r"`swarmdeck ([a-z][a-z-]*)", row.doc):
            assert command in COMMANDS, row
