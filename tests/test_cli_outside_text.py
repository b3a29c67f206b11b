"""Labels, commands and messages come from agents and transcripts: `swarmdeck status`, `alerts`
and `kills` show their control characters as escapes, so none reaches the terminal and none
splits a row; `status --json` keeps the exact text."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from swarmdeck.actions.alerts import raise_alert
from swarmdeck.state import StateStore

SWARMDECK = str(Path(sys.executable).with_name("swarmdeck"))
LABEL = "two\nlines\x1b[31mred"
SHOWN = "two ⏎ lines\\x1b[31mred"


def swarmdeck(*argv: str) -> str:
    """The output of `swarmdeck ARGV`, piped and as wide as its content (no `COLUMNS`)."""
    env = {key: value for key, value in os.environ.items() if key != "COLUMNS"}
    done = subprocess.run(
        [SWARMDECK, *argv], capture_output=True, text=True, timeout=60, env=env
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_label_with_control_characters_is_one_row_of_status_with_them_escaped(
    own_slice: Path,
) -> None:
    swarmdeck("run", "--label", LABEL, "--", "true")
    out = swarmdeck("status")
    assert "\x1b" not in out
    [row] = [line for line in out.splitlines() if "two" in line]
    assert SHOWN in row and " ok " in row


def test_status_json_keeps_the_exact_label(own_slice: Path) -> None:
    swarmdeck("run", "--label", LABEL, "--", "true")
    [job] = json.loads(swarmdeck("status", "--json"))["jobs"]
    assert job["label"] == LABEL


def test_alerts_shows_a_message_with_control_characters_escaped() -> None:
    store = StateStore.open_default()
    with store.transaction() as conn:
        raise_alert(conn, "k", "warning", "runner", "vm", f"job {LABEL} failed", time.time())
    out = swarmdeck("alerts")
    assert "\x1b" not in out and out.count("\n") == 1
    assert f"job {SHOWN} failed" in out


def test_kills_shows_a_command_and_reason_with_control_characters_escaped() -> None:
    store = StateStore.open_default()
    with store.transaction() as conn:
        conn.execute(
            "INSERT INTO kill_requests (host, pid, start_ticks, user, command, reason, state)"
            " VALUES ('vm', 4242, 1, 'me', ?, ?, 'pending')",
            (f"sh -c {LABEL}", f"held {LABEL}"),
        )
    out = swarmdeck("kills")
    assert "\x1b" not in out and out.count("\n") == 1
    assert f"sh -c {SHOWN}" in out and f"held {SHOWN}" in out
