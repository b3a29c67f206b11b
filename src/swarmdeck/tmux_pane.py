"""Go to a Claude Code session's tmux pane: the one its pid file names (`tmux: "0:@3.%7"`).

Inside tmux (`$TMUX` set) the client switches to that pane (`tmux switch-client -t %7`: the
pane's session, window and pane at once); outside, or when tmux refuses, the answer is the
command to run, so the person can type it where they are.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass

TIMEOUT = 5.0


@dataclass(frozen=True)
class GoResult:
    switched: bool
    message: str


def pane_target(tmux: str | None) -> str | None:
    """The pane id (`%7`) of a pid file's `tmux` field, else the field as tmux's target."""
    if not tmux or not tmux.strip():
        return None
    pane = tmux.rsplit(".", 1)[-1]
    return pane if pane.startswith("%") and pane[1:].isdigit() else tmux.strip()


def switch_command(tmux: str) -> list[str]:
    return ["tmux", "switch-client", "-t", pane_target(tmux) or tmux]


def go_to_pane(tmux: str | None, env: Mapping[str, str] | None = None) -> GoResult:
    """Switch this tmux client to the pane, or say how to get there."""
    env = os.environ if env is None else env
    if pane_target(tmux) is None or tmux is None:
        return GoResult(False, "no tmux pane: the session is not live in tmux")
    command = switch_command(tmux)
    line = shlex.join(command)
    if not env.get("TMUX"):
        session = tmux.split(":", 1)[0]
        return GoResult(False, f"not inside tmux: run `tmux attach -t {shlex.quote(session)}`"
                               f" then `{line}`")
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT,
                              env=dict(env), check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        return GoResult(False, f"`{line}` failed ({error.__class__.__name__}); run it yourself")
    if done.returncode != 0:
        why = (done.stderr.strip().splitlines() or ["no reason given"])[-1]
        return GoResult(False, f"`{line}` failed: {why}")
    return GoResult(True, f"switched to pane {pane_target(tmux)}")
