"""pathlib's reading of a POSIX path, on plain strings, for the modules `swarmdeck run` imports.

`swarmdeck run` starts before every caged command, and importing pathlib costs it about 4 ms on
Python 3.11 (pathlib brings urllib.parse, ipaddress, fnmatch and re). What those modules ask of
a path is small: its tidy spelling, its last name, its parent, whether it lies inside another
and what it is below it. Each function here answers as `PurePosixPath` does: empty and "."
parts dropped, repeated slashes made one (two leading ones kept, as POSIX allows), ".." kept
as written.
"""

from __future__ import annotations

import os


def _split(path: str) -> tuple[str, list[str]]:
    """The anchor ("", "/" or "//") and the parts after it."""
    if path.startswith("//") and not path.startswith("///"):
        anchor = "//"
    elif path.startswith("/"):
        anchor = "/"
    else:
        anchor = ""
    return anchor, [part for part in path.split("/") if part and part != "."]


def tidy(path: str) -> str:
    """`str(PurePosixPath(path))`."""
    anchor, parts = _split(path)
    return anchor + "/".join(parts) or "."


def joined(base: str, *names: str) -> str:
    """`str(PurePosixPath(base, *names))`: an absolute name starts again from itself."""
    return tidy(os.path.join(base, *names))


def name_of(path: str) -> str:
    """`PurePosixPath(path).name`: the last part, "" for an anchor alone or "."."""
    _, parts = _split(path)
    return parts[-1] if parts else ""


def parent_of(path: str) -> str:
    """`str(PurePosixPath(path).parent)`: the path itself for an anchor alone or "."."""
    anchor, parts = _split(path)
    return anchor + "/".join(parts[:-1]) or "."


def is_within(path: str, root: str) -> bool:
    """`PurePosixPath(path) == PurePosixPath(root) or root in path's parents`."""
    anchor, parts = _split(path)
    root_anchor, root_parts = _split(root)
    return anchor == root_anchor and parts[: len(root_parts)] == root_parts


def below(path: str, root: str) -> str:
    """`str(PurePosixPath(path).relative_to(root))` for a path `is_within` root."""
    _, parts = _split(path)
    return "/".join(parts[len(_split(root)[1]) :]) or "."
