"""`hooks install --strict`: write `[guards] preset = "strict"` into the config file.

The file is edited as text, so its comments and order stay: the `preset` line of an existing
[guards] table is replaced, or one is added under its header, or the table is appended. The new
text is checked by the config's own loader before it replaces the file, so a file that would
not load is never written; a symlinked config is written where it points.
"""

from __future__ import annotations

import os

PRESET_LINE = 'preset = "strict"'


def with_strict_preset(text: str) -> str:
    """`text` with [guards] preset set to strict."""
    lines = text.splitlines()
    header = next((i for i, line in enumerate(lines) if line.strip() == "[guards]"), None)
    if header is None:
        tail = "" if not text or text.endswith("\n") else "\n"
        gap = "\n" if text.strip() else ""
        return f"{text}{tail}{gap}[guards]\n{PRESET_LINE}\n"
    end = next(
        (i for i in range(header + 1, len(lines)) if lines[i].lstrip().startswith("[")),
        len(lines),
    )
    for index in range(header + 1, end):
        if lines[index].split("=", 1)[0].strip() == "preset":
            lines[index] = PRESET_LINE
            return "\n".join(lines) + "\n"
    lines.insert(header + 1, PRESET_LINE)
    return "\n".join(lines) + "\n"


def set_strict(path: str) -> bool:
    """Write the strict preset into the config at `path`; False when it was already set."""
    from swarmdeck.config import load_config, parse_config
    from swarmdeck.regular_files import replace_whole

    # A symlinked config (dotfiles) is written where it points, and stays a link.
    path = os.path.realpath(path)
    config = load_config(path)
    if config.guards.preset == "strict" and config.sources.get("guards.preset") != "default":
        return False
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
        mode = os.stat(path).st_mode & 0o777
    except FileNotFoundError:
        text, mode = "", 0o644
    new = with_strict_preset(text)
    parse_config(new, path)
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    replace_whole(path, new.encode("utf-8"), mode)
    return True
