"""Where swarmdeck finds its config, keeps its state and reads Claude Code's files.

Each place is given as a str (`config_path`, `state_dir`, `state_db_path`, `claude_dir`,
`run_dir`); a caller that works with pathlib wraps it. The hook's light path reads these
places before every Bash call, and pathlib would cost it more than the rest of its imports.
"""

from __future__ import annotations

import os


def _home(*parts: str) -> str:
    return os.path.join(os.path.expanduser("~"), *parts)


PLACE_VARIABLES: dict[str, str] = {
    "SWARMDECK_STATE_DIR": "a folder",
    "SWARMDECK_CONFIG": "a config file",
    "CLAUDE_CONFIG_DIR": "Claude Code's folder",
}
"""The variables naming a place swarmdeck uses, and what to give instead of an empty one."""


def empty_place_refusal() -> str | None:
    """Why one of `PLACE_VARIABLES` cannot be used, or None when each is unset or names a place.

    A variable set to nothing is a mistake (an unexpanded `$DIR`, a script's empty default),
    never a wish for the default: read as the default, it would land a test, a demo or a
    private experiment on this user's real state and Claude Code's real folder.
    """
    for name in PLACE_VARIABLES:
        value = os.environ.get(name)
        if value is not None and not value.strip():
            return _empty(name)
    return None


def _empty(name: str) -> str:
    return f"{name} is set but empty: unset it for the default, or give {PLACE_VARIABLES[name]}"


def _explicit(name: str) -> str | None:
    """The place variable `name` names, or None when unset; set but empty is refused."""
    value = os.environ.get(name)
    if value is None or value.strip():
        return value
    # Imported only here: the hook's light path does without enum, which errors brings in.
    from swarmdeck.errors import ConfigError, StateError

    raise (StateError if name == "SWARMDECK_STATE_DIR" else ConfigError)(_empty(name))


def config_path() -> str:
    """The config file: $SWARMDECK_CONFIG, else $XDG_CONFIG_HOME/swarmdeck/config.toml."""
    explicit = _explicit("SWARMDECK_CONFIG")
    if explicit is not None:
        return explicit
    base = os.environ.get("XDG_CONFIG_HOME") or _home(".config")
    return os.path.join(base, "swarmdeck", "config.toml")


def explicit_config() -> str | None:
    """The config file SWARMDECK_CONFIG names, tidied as config paths are; None when unset."""
    from pathlib import Path

    explicit = _explicit("SWARMDECK_CONFIG")
    return None if explicit is None else str(Path(explicit))


def state_dir() -> str:
    """The state folder: $SWARMDECK_STATE_DIR, else $XDG_STATE_HOME/swarmdeck/."""
    explicit = _explicit("SWARMDECK_STATE_DIR")
    if explicit is not None:
        return explicit
    base = os.environ.get("XDG_STATE_HOME") or _home(".local", "state")
    return os.path.join(base, "swarmdeck")


def state_db_path() -> str:
    """The SQLite store inside the state folder."""
    return os.path.join(state_dir(), "state.db")





def claude_dir() -> str:
    """Claude Code's folder: $CLAUDE_CONFIG_DIR, else ~/.claude."""
    explicit = _explicit("CLAUDE_CONFIG_DIR")
    return _home(".claude") if explicit is None else explicit


PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600


def state_dir_refusal(path: str) -> str | None:
    """Why the existing folder `path` must not hold swarmdeck's state, or None when it may.

    State holds every job's argv, cwd and output: a folder another user owns, or one others
    may write to, would let them read it, plant links in it or hold its locks.
    """
    import stat

    try:
        st = os.stat(path)
    except FileNotFoundError:
        try:
            target = os.readlink(path)
        except OSError:
            # Not a link (or no longer one): plainly missing.
            return f"state folder {path} does not exist"
        return f"state folder {path} links to {target!r}, which does not exist"
    except OSError as error:
        return f"state folder {path} cannot be read ({error.strerror})"
    if not stat.S_ISDIR(st.st_mode):
        return f"state folder {path} is not a folder"
    if st.st_uid != os.geteuid():
        return (
            f"state folder {path} belongs to uid {st.st_uid}, not to you (uid {os.geteuid()}):"
            " set SWARMDECK_STATE_DIR to a folder of your own"
        )
    if st.st_mode & 0o022:
        return (
            f"state folder {path} may be written by others (mode {stat.S_IMODE(st.st_mode):o}):"
            f" run chmod 700 {path}, or set SWARMDECK_STATE_DIR to a folder of your own"
        )
    return None


def private_dir(path: str) -> str:
    """`path` as a folder only this user can enter: made 0700 when missing, an existing one of
    this user's narrowed to 0700, anything else refused with StateError (one line)."""
    from swarmdeck.errors import StateError

    try:
        os.makedirs(path, mode=PRIVATE_DIR_MODE, exist_ok=True)
    except FileExistsError:
        pass  # a dangling link or a file: the refusal below says which
    except OSError as error:
        raise StateError(
            f"cannot create the state folder {path} ({error.strerror}); "
            "set SWARMDECK_STATE_DIR to a writable folder"
        ) from None
    refusal = state_dir_refusal(path)
    if refusal is not None:
        raise StateError(refusal)
    try:
        if os.stat(path).st_mode & 0o077:
            os.chmod(path, PRIVATE_DIR_MODE)
    except OSError as error:
        # A folder of this user's that the kernel will not narrow (/proc, a read-only mount):
        # left as it is, others could read every job's argv and output in it.
        raise StateError(
            f"cannot make the state folder {path} private ({error.strerror}); "
            "set SWARMDECK_STATE_DIR to a folder of your own"
        ) from None
    return path


def private_state_dir() -> str:
    """The state folder, made private (see `private_dir`)."""
    return private_dir(state_dir())


def run_dir() -> str:
    """Machine-wide runtime records (which ledger owns a slice): $SWARMDECK_RUN_DIR, else
    /run/swarmdeck for root, else $XDG_RUNTIME_DIR/swarmdeck, else /tmp/swarmdeck-UID."""
    explicit = os.environ.get("SWARMDECK_RUN_DIR")
    if explicit:
        return explicit
    if os.geteuid() == 0:
        return "/run/swarmdeck"
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime:
        return os.path.join(runtime, "swarmdeck")
    return f"/tmp/swarmdeck-{os.geteuid()}"
