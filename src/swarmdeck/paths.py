"""Where swarmdeck finds its config, keeps its state and reads Claude Code's files."""

import os
from pathlib import Path


def config_path() -> Path:
    """The config file: $SWARMDECK_CONFIG, else $XDG_CONFIG_HOME/swarmdeck/config.toml."""
    explicit = os.environ.get("SWARMDECK_CONFIG")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "swarmdeck" / "config.toml"


def state_dir() -> Path:
    """The state folder: $SWARMDECK_STATE_DIR, else $XDG_STATE_HOME/swarmdeck/."""
    explicit = os.environ.get("SWARMDECK_STATE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "swarmdeck"


def state_db_path() -> Path:
    """The SQLite store inside the state folder."""
    return state_dir() / "state.db"


def claude_dir() -> Path:
    """Claude Code's folder: $CLAUDE_CONFIG_DIR, else ~/.claude."""
    explicit = os.environ.get("CLAUDE_CONFIG_DIR")
    if explicit:
        return Path(explicit)
    return Path.home() / ".claude"
