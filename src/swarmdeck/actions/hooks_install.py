"""`swarmdeck hooks install`: merge swarmdeck's hook entries into a Claude Code settings.json.

The merge is idempotent and keeps everything else in the file: other keys, other hooks, their
order. Our handlers are recognised by their command (`… swarmdeck hook EVENT`); a second install
updates them in place, and `--uninstall` removes only them (and a group, an event list or the
`hooks` object only when removing ours left it empty, so install + uninstall gives back the
file as it was; only an event list that was already empty before the install does not come
back). Before a write the old file is copied aside, and the change is shown as a unified diff.
"""

from __future__ import annotations

import copy
import difflib
import json
import os
import shlex
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from swarmdeck import paths
from swarmdeck.errors import UsageError
from swarmdeck.hook_events import ASKING_NOTIFICATIONS

SESSION_SOURCES = "startup|resume|clear|compact|fork"


@dataclass(frozen=True)
class HookEntry:
    """One handler swarmdeck wants in settings.json."""

    event: str
    matcher: str | None
    argument: str
    """The EVENT of `swarmdeck hook EVENT`."""
    timeout: int
    """Seconds (Claude Code's unit for hook timeouts)."""


ENTRIES = (
    HookEntry("PreToolUse", "Bash", "pre-tool-use", 10),
    HookEntry("PreToolUse", "Agent|Task", "pre-tool-use", 10),
    # The tools only guards look at (hooks/guards.py): writes, messages, scheduled prompts.
    HookEntry(
        "PreToolUse", "Write|Edit|MultiEdit|NotebookEdit|SendMessage|CronCreate", "pre-tool-use",
        10,
    ),
    # Every tool: a finding that appeared during any tool call (a Bash one above all) is said
    # right after it (hooks/findings_note.py), and the watchdog reads the Bash calls' ends.
    HookEntry("PostToolUse", None, "post-tool-use", 10),
    # A call that failed (a Bash command's non-zero exit) ends here instead of PostToolUse.
    HookEntry("PostToolUseFailure", None, "post-tool-use-failure", 10),
    HookEntry("SessionStart", SESSION_SOURCES, "session-start", 20),
    HookEntry("SubagentStart", None, "subagent-start", 10),
    HookEntry("SubagentStop", None, "subagent-stop", 10),
    HookEntry("Stop", None, "stop", 10),
    # Only the prompts that wait for the person: the Agents panel's "waiting for you"
    # (probes/claude/hook_activity.py); one that only tells something would end a wait.
    HookEntry("Notification", "|".join(ASKING_NOTIFICATIONS), "notification", 10),
    # The permission dialog, the moment it opens (the Notification comes seconds later).
    HookEntry("PermissionRequest", None, "permission-request", 10),
    # The session's end: its subagents and waits end with it, pid file or not.
    HookEntry("SessionEnd", None, "session-end", 10),
)


@dataclass(frozen=True)
class InstallResult:
    """What an install or uninstall did to one settings file."""

    path: Path
    changed: bool
    backup: Path | None
    diff: str


def settings_path(user: bool, project: str | None) -> Path:
    """The user's settings.json, or DIR/.claude/settings.json for `--project DIR`."""
    if project is not None:
        folder = Path(project)
        if not folder.is_dir():
            raise UsageError(f"hooks install --project {project}: no such directory")
        return folder / ".claude" / "settings.json"
    return Path(paths.claude_dir()) / "settings.json"


def swarmdeck_executable() -> str:
    """How settings.json should start swarmdeck: this console script by its absolute path."""
    launched = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if launched is not None and launched.name == "swarmdeck" and launched.is_file():
        return str(launched.absolute())
    found = shutil.which("swarmdeck")
    return found or "swarmdeck"


def is_ours(handler: Any) -> bool:
    """A handler that runs `swarmdeck hook EVENT`, whatever path swarmdeck was given by."""
    if not isinstance(handler, dict):
        return False
    command = handler.get("command")
    if not isinstance(command, str):
        return False
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    return len(words) >= 2 and os.path.basename(words[0]) == "swarmdeck" and words[1] == "hook"


def wanted_handler(entry: HookEntry, executable: str) -> dict[str, Any]:
    return {
        "type": "command",
        "command": f"{shlex.quote(executable)} hook {entry.argument}",
        "timeout": entry.timeout,
    }


def merged(settings: dict[str, Any], executable: str) -> dict[str, Any]:
    """The settings with every swarmdeck entry present and current; nothing else changed.

    An existing handler of ours is updated where it stands; a missing one gets its own group
    at the end of its event's list.
    """
    out = copy.deepcopy(settings)
    wanted = {(e.event, e.matcher): wanted_handler(e, executable) for e in ENTRIES}
    placed: set[tuple[str, str | None]] = set()

    def keep(event: str, matcher: str | None, handler: dict[str, Any]) -> dict[str, Any] | None:
        key = (event, matcher)
        if key in wanted and key not in placed:
            placed.add(key)
            return _updated(handler, wanted[key])
        return None

    _rewrite_ours(out, keep)
    for entry in ENTRIES:
        key = (entry.event, entry.matcher)
        if key in placed:
            continue
        group: dict[str, Any] = {}
        if entry.matcher is not None:
            group["matcher"] = entry.matcher
        group["hooks"] = [wanted[key]]
        groups = _hooks_object(out, create=True).setdefault(entry.event, [])
        if not isinstance(groups, list):
            raise UsageError(f"settings.json: hooks.{entry.event} is not a list; fix it by hand")
        groups.append(group)
    return out


def without_ours(settings: dict[str, Any]) -> dict[str, Any]:
    """The settings with every swarmdeck handler removed, and only what that emptied."""
    out = copy.deepcopy(settings)
    _rewrite_ours(out, lambda event, matcher, handler: None)
    return out


Keep = Callable[[str, "str | None", dict[str, Any]], "dict[str, Any] | None"]


def _rewrite_ours(settings: dict[str, Any], keep: Keep) -> None:
    """Replace each handler of ours by `keep(event, matcher, handler)` (None removes it).

    A group, an event list or the hooks object that removing ours leaves empty goes too;
    one that was empty before stays as it was.
    """
    if "hooks" not in settings:
        return
    hooks = _hooks_object(settings, create=False)
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        kept_groups = []
        emptied = False
        for group in groups:
            if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
                kept_groups.append(group)
                continue
            handlers = []
            removed = False
            for handler in group["hooks"]:
                if not is_ours(handler):
                    handlers.append(handler)
                    continue
                replacement = keep(event, _matcher(group), handler)
                if replacement is None:
                    removed = True
                else:
                    handlers.append(replacement)
            if removed and not handlers:
                emptied = True
                continue
            group["hooks"] = handlers
            kept_groups.append(group)
        hooks[event] = kept_groups
        if emptied and not kept_groups:
            del hooks[event]
            if not hooks:
                del settings["hooks"]


def _matcher(group: dict[str, Any]) -> str | None:
    matcher = group.get("matcher")
    return matcher if isinstance(matcher, str) and matcher not in ("", "*") else None


def _updated(handler: dict[str, Any], wanted: dict[str, Any]) -> dict[str, Any]:
    """Our handler brought up to date, keeping any extra field a person added to it."""
    updated = dict(handler)
    updated.update(wanted)
    return updated


def _hooks_object(settings: dict[str, Any], create: bool) -> dict[str, Any]:
    hooks = settings.get("hooks")
    if hooks is None and create:
        hooks = settings["hooks"] = {}
    if not isinstance(hooks, dict):
        raise UsageError("settings.json: `hooks` is not an object; fix it by hand")
    return hooks


def read_settings(path: Path) -> tuple[dict[str, Any], str]:
    """The parsed settings and their text; a missing file is an empty object."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}, ""
    except OSError as error:
        raise UsageError(f"cannot read {path}: {error.strerror}; nothing was changed") from None
    if not text.strip():
        return {}, text
    try:
        data = json.loads(text)
    except ValueError as error:
        raise UsageError(
            f"{path} is not valid JSON ({error}); fix it or move it aside; nothing was changed"
        ) from None
    if not isinstance(data, dict):
        raise UsageError(f"{path} does not hold a JSON object; nothing was changed")
    return data, text


def indentation(text: str) -> str | int:
    """The indentation the file already uses (2 spaces when it cannot tell)."""
    for line in text.splitlines()[1:]:
        stripped = line.lstrip(" \t")
        if stripped and len(stripped) < len(line):
            lead = line[: len(line) - len(stripped)]
            return "\t" if lead.startswith("\t") else len(lead)
    return 2


def render(settings: dict[str, Any], like: str) -> str:
    return json.dumps(settings, indent=indentation(like), ensure_ascii=False) + "\n"


def apply(path: Path, uninstall: bool = False, executable: str | None = None) -> InstallResult:
    """Install (or uninstall) swarmdeck's hooks in the settings file at `path`."""
    settings, old_text = read_settings(path)
    if uninstall:
        new_settings = without_ours(settings)
    else:
        new_settings = merged(settings, executable or swarmdeck_executable())
    if new_settings == settings and old_text.strip():
        return InstallResult(path, False, None, "")
    if uninstall and not old_text.strip():
        return InstallResult(path, False, None, "")
    new_text = render(new_settings, old_text)
    diff = "".join(
        difflib.unified_diff(
            old_text.splitlines(keepends=True),
            new_text.splitlines(keepends=True),
            fromfile=f"{path} (before)",
            tofile=f"{path} (after)",
        )
    )
    backup = _backup(path) if old_text else None
    _write(path, new_text)
    return InstallResult(path, True, backup, diff)


def _backup(path: Path) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    backup = path.with_name(f"{path.name}.swarmdeck-backup-{stamp}")
    counter = 1
    while backup.exists():
        backup = path.with_name(f"{path.name}.swarmdeck-backup-{stamp}-{counter}")
        counter += 1
    try:
        shutil.copy2(path, backup)
    except OSError as error:
        raise UsageError(
            f"cannot back up {path} to {backup}: {error.strerror}; nothing was changed"
        ) from None
    return backup


def _write(path: Path, text: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f".{path.name}.swarmdeck-{os.getpid()}.tmp")
        temporary.write_text(text, encoding="utf-8")
        if path.exists():
            shutil.copymode(path, temporary)
        os.replace(temporary, path)
    except OSError as error:
        raise UsageError(f"cannot write {path}: {error.strerror}") from None
