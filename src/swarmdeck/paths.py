"""Where swarmdeck finds its config, keeps its state and reads Claude Code's files.

Each place is worked out once, as text, by a `*_text` function; the Path-returning functions
wrap those. pathlib is imported only inside the wrappers: the hook's light path, which runs
before every Bash call an agent makes, needs two of these places but not pathlib's import time.
"""

from __future__ import annotations

import os

# Not `from typing import TYPE_CHECKING`: the hook's light path does without typing's import.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path


def _home(*parts: str) -> str:
    return os.path.join(os.path.expanduser("~"), *parts)


def config_path_text() -> str:
    """The config file: $SWARMDECK_CONFIG, else $XDG_CONFIG_HOME/swarmdeck/config.toml."""
    explicit = os.environ.get("SWARMDECK_CONFIG")
    if explicit:
        return explicit
    base = os.environ.get("XDG_CONFIG_HOME") or _home(".config")
    return os.path.join(base, "swarmdeck", "config.toml")


def state_dir_text() -> str:
    """The state folder: $SWARMDECK_STATE_DIR, else $XDG_STATE_HOME/swarmdeck/."""
    explicit = os.environ.get("SWARMDECK_STATE_DIR")
    if explicit:
        return explicit
    base = os.environ.get("XDG_STATE_HOME") or _home(".local", "state")
    return os.path.join(base, "swarmdeck")


def state_db_path_text() -> str:
    """The SQLite store inside the state folder."""
    return os.path.join(state_dir_text(), "state.db")


def claude_dir_text() -> str:
    """Claude Code's folder: $CLAUDE_CONFIG_DIR, else ~/.claude."""
    return os.environ.get("CLAUDE_CONFIG_DIR") or _home(".claude")


def config_path() -> Path:
    """The config file, as a Path."""
    from pathlib import Path

    return Path(config_path_text())


def state_dir() -> Path:
    """The state folder, as a Path."""
    from pathlib import Path

    return Path(state_dir_text())


def state_db_path() -> Path:
    """The SQLite store, as a Path."""
    from pathlib import Path

    return Path(state_db_path_text())


def claude_dir() -> Path:
    """Claude Code's folder, as a Path."""
    from pathlib import Path

    return Path(claude_dir_text())
