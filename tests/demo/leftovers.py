"""What a demo scene may leave behind, looked for from outside it."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path


def processes_mentioning(text: str) -> list[int]:
    """Live processes whose command line or environment names `text` (the scene's folder)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            blob = (entry / "cmdline").read_bytes() + (entry / "environ").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if text.encode() in blob and state != "Z":
            found.append(int(entry.name))
    return found


def ended(demo: subprocess.Popen[str]) -> None:
    """A demo a test started, ended whatever the test left it doing: its whole session killed
    if it still runs, and its pipes closed."""
    if demo.poll() is None:
        os.killpg(demo.pid, signal.SIGKILL)
        demo.wait()
    for stream in (demo.stdout, demo.stderr):
        if stream is not None:
            stream.close()
