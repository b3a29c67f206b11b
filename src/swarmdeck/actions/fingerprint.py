"""The workload fingerprint that learned peaks are keyed by: normalised command + tree identity.

The tree identity is the project's first commit when the cwd is inside a git repository, so a
scratch copy or a worktree of the same project shares its history, while another project, or
another directory within it, is a different workload and shows up as one. Outside git the
identity is the directory itself.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

GIT_TIMEOUT = 2.0


@dataclass(frozen=True)
class TreeIdentity:
    """Which project tree a command runs in, and where inside it."""

    tree: str
    """'git:<root commit>' inside a repository with commits, else 'dir:<absolute path>'."""
    subdir: str
    """The cwd relative to the repository's top ('.' at the top); '.' outside git."""


def find_repo_top(cwd: Path) -> Path | None:
    """The nearest directory at or above cwd holding a .git entry."""
    for directory in (cwd, *cwd.parents):
        if (directory / ".git").exists():
            return directory
    return None


def _root_commit(top: Path) -> str | None:
    try:
        result = subprocess.run(
            ["git", "-C", str(top), "rev-list", "--max-parents=0", "HEAD"],
            capture_output=True, text=True, timeout=GIT_TIMEOUT, check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        # No git binary or a hung repository: the directory identity below still works.
        return None
    roots = sorted(result.stdout.split())
    return roots[0] if result.returncode == 0 and roots else None


def tree_identity(cwd: Path) -> TreeIdentity:
    cwd = cwd.resolve()
    top = find_repo_top(cwd)
    if top is not None:
        root = _root_commit(top)
        if root is not None:
            return TreeIdentity(tree=f"git:{root}", subdir=str(cwd.relative_to(top)))
    return TreeIdentity(tree=f"dir:{cwd}", subdir=".")


def normalise_command(argv: Sequence[str], cwd: Path) -> list[str]:
    """The command as a workload: the program by its name, paths under cwd made relative.

    `.venv/bin/python -m pytest` and `/usr/bin/python -m pytest` are the same workload;
    `pytest tests/a` and `pytest tests/b` are not.
    """
    if not argv:
        return []
    prefix = str(cwd.resolve()) + os.sep
    words = [Path(argv[0]).name]
    for word in argv[1:]:
        words.append(word[len(prefix):] if word.startswith(prefix) else " ".join(word.split()))
    return words


def fingerprint(argv: Sequence[str], cwd: Path) -> str:
    """A short stable key for the workload `argv` run in `cwd`."""
    ident = tree_identity(cwd)
    text = json.dumps([ident.tree, ident.subdir, normalise_command(argv, cwd)])
    return hashlib.sha256(text.encode()).hexdigest()[:16]
