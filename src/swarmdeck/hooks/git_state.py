"""Uncommitted changes in a working directory, read with a short timeout.

A session that restarts or compacts forgets what it left unfinished; `git status` says it.
A hung repository (a network filesystem, a lock) must not hold the hook, hence the timeout.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass

GIT_TIMEOUT = 2.0
"""Seconds `git status` may take inside SessionStart's budget before the line says "not read"."""


@dataclass(frozen=True)
class Changes:
    """What `git status --porcelain` listed: (status, path) pairs, or why it was not read."""

    entries: tuple[tuple[str, str], ...]
    state: str
    """"read", "not a repository" or "not read"."""
    reason: str = ""


def uncommitted_changes(cwd: str, timeout: float = GIT_TIMEOUT) -> Changes:
    try:
        result = subprocess.run(
            ["git", "-C", cwd, "status", "--porcelain", "--untracked-files=normal"],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return Changes((), "not read", f"git status took over {timeout:g} s")
    except OSError as error:
        return Changes((), "not read", str(error))
    if result.returncode != 0:
        return Changes((), "not a repository", result.stderr.strip()[:200])
    entries = []
    for line in result.stdout.splitlines():
        if len(line) > 3:
            entries.append((line[:2].strip(), line[3:]))
    return Changes(tuple(entries), "read")
