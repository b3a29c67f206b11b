"""`swarmdeck hooks install`: an idempotent merge that keeps every key and undoes cleanly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from swarmdeck.actions.hooks_install import ENTRIES, apply, is_ours, merged, without_ours
from swarmdeck.cli import main

EXISTING = {
    "model": "opus",
    "permissions": {"allow": ["Bash(git status:*)"], "deny": []},
    "env": {"FOO": "1"},
    "hooks": {
        "PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "~/guard.sh"}]},
            {"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "fmt.sh"}]},
        ],
        "Notification": [{"hooks": [{"type": "command", "command": "notify-send hi"}]}],
    },
    "statusLine": {"type": "command", "command": "ccline"},
}


def _settings(home: Path) -> Path:
    path = home / "claude" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(EXISTING, indent=4) + "\n")
    return path


def _ours(settings: dict) -> list[tuple[str, str | None, str]]:
    found = []
    for event, groups in settings.get("hooks", {}).items():
        for group in groups:
            for handler in group["hooks"]:
                if is_ours(handler):
                    found.append((event, group.get("matcher"), handler["command"]))
    return found


def test_install_round_trips_an_existing_settings_file(
    isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _settings(isolated_home)
    original = path.read_text()
    assert main(["hooks", "install"]) == 0
    out = capsys.readouterr().out
    assert "+" in out and "swarmdeck hooks installed in" in out
    installed = json.loads(path.read_text())
    for key, value in EXISTING.items():
        if key != "hooks":
            assert installed[key] == value
    assert installed["hooks"]["PreToolUse"][:2] == EXISTING["hooks"]["PreToolUse"]
    assert installed["hooks"]["Notification"][:1] == EXISTING["hooks"]["Notification"]
    assert len(_ours(installed)) == len(ENTRIES)
    assert path.read_text().startswith('{\n    "model"')  # the file's own indentation
    backups = list(path.parent.glob("settings.json.swarmdeck-backup-*"))
    assert [b.read_text() for b in backups] == [original]

    assert main(["hooks", "install", "--uninstall"]) == 0
    assert json.loads(path.read_text()) == EXISTING


def test_install_twice_changes_nothing(
    isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _settings(isolated_home)
    main(["hooks", "install"])
    after_first = path.read_text()
    capsys.readouterr()
    assert main(["hooks", "install", "--user"]) == 0
    assert "already installed" in capsys.readouterr().out
    assert path.read_text() == after_first
    assert len(list(path.parent.glob("settings.json.swarmdeck-backup-*"))) == 1


def test_reinstall_updates_our_entries_in_place() -> None:
    first = merged(EXISTING, "/old/bin/swarmdeck")
    first["hooks"]["PreToolUse"].append({"matcher": "Read", "hooks": [{"type": "command",
                                                                        "command": "mine"}]})
    second = merged(first, "/new/bin/swarmdeck")
    commands = [c for _, _, c in _ours(second)]
    assert len(commands) == len(ENTRIES)
    assert all(c.startswith("/new/bin/swarmdeck hook ") for c in commands)
    assert second["hooks"]["PreToolUse"][-1]["matcher"] == "Read"


def test_uninstall_removes_only_ours_even_inside_a_shared_group() -> None:
    shared = {
        "hooks": {
            "Stop": [
                {
                    "hooks": [
                        {"type": "command", "command": "/x/swarmdeck hook stop"},
                        {"type": "command", "command": "say done"},
                    ]
                }
            ]
        },
        "keep": True,
    }
    assert without_ours(shared) == {
        "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]},
        "keep": True,
    }
    assert without_ours({"hooks": {}}) == {"hooks": {}}


def test_project_settings_and_missing_file(isolated_home: Path) -> None:
    project = isolated_home / "proj"
    project.mkdir()
    assert main(["hooks", "install", "--project", str(project)]) == 0
    path = project / ".claude" / "settings.json"
    assert len(_ours(json.loads(path.read_text()))) == len(ENTRIES)
    assert not list(path.parent.glob("*.swarmdeck-backup-*"))


def test_invalid_settings_are_left_untouched(
    isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = isolated_home / "claude" / "settings.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"model": "opus",}')
    assert main(["hooks", "install"]) == 251
    assert "not valid JSON" in capsys.readouterr().err
    assert path.read_text() == '{"model": "opus",}'
    assert main(["hooks", "install", "--project", str(isolated_home / "nope")]) == 251


def test_apply_reports_the_diff(isolated_home: Path) -> None:
    path = _settings(isolated_home)
    result = apply(path, executable="/opt/sd/swarmdeck")
    assert result.changed
    added = [line for line in result.diff.splitlines() if line.startswith("+")]
    assert any('"command": "/opt/sd/swarmdeck hook pre-tool-use"' in line for line in added)
    assert result.backup is not None and result.backup.exists()


def test_each_entry_is_a_command_handler_claude_code_reads() -> None:
    """`{"hooks": {EVENT: [{"matcher": M, "hooks": [{"type": "command", "command": C,
    "timeout": SECONDS}]}]}}`, the matcher left out where the event takes none."""
    installed = merged({}, "/opt/sd/bin/swarmdeck")
    assert set(installed) == {"hooks"}
    expected: dict[str, list[dict]] = {}
    for entry in ENTRIES:
        group: dict = {} if entry.matcher is None else {"matcher": entry.matcher}
        group["hooks"] = [{"type": "command",
                           "command": f"/opt/sd/bin/swarmdeck hook {entry.argument}",
                           "timeout": entry.timeout}]
        expected.setdefault(entry.event, []).append(group)
    assert installed["hooks"] == expected
    assert {g.get("matcher") for g in installed["hooks"]["PreToolUse"]} == {
        "Bash", "Agent|Task", "Write|Edit|MultiEdit|NotebookEdit|SendMessage|CronCreate"
    }
    assert installed["hooks"]["SessionStart"][0]["matcher"] == "startup|resume|clear|compact|fork"
    for event in ("PostToolUse", "SubagentStart", "SubagentStop", "Stop"):
        assert "matcher" not in installed["hooks"][event][0]
    timeouts = [h["timeout"] for gs in installed["hooks"].values() for g in gs for h in g["hooks"]]
    assert all(isinstance(t, int) and 1 <= t <= 60 for t in timeouts)
    assert installed["hooks"]["SessionStart"][0]["hooks"][0]["timeout"] == 20
    assert merged(installed, "/opt/sd/bin/swarmdeck") == installed


def test_post_tool_use_is_installed_for_every_tool_so_a_finding_follows_a_bash_call() -> None:
    """A finding that appears during a Bash call is said right after it (findings_note.py)."""
    [group] = merged({}, "/opt/sd/bin/swarmdeck")["hooks"]["PostToolUse"]
    assert "matcher" not in group
    assert group["hooks"][0]["command"] == "/opt/sd/bin/swarmdeck hook post-tool-use"


def test_notification_is_installed_for_the_prompts_that_wait_for_the_person() -> None:
    """The Agents panel's "waiting for you" comes from these (hook_activity.hook_waits); a
    notification that only tells something must not end a wait, so it is not asked for."""
    from swarmdeck.probes.claude.hook_activity import ASKING

    [group] = merged({}, "/opt/sd/bin/swarmdeck")["hooks"]["Notification"]
    assert set(group["matcher"].split("|")) == ASKING
    assert group["hooks"][0]["command"] == "/opt/sd/bin/swarmdeck hook notification"
    once = merged({}, "/x/swarmdeck")
    assert merged(once, "/x/swarmdeck") == once


def test_an_install_over_an_older_one_moves_post_tool_use_to_every_tool() -> None:
    older = {"hooks": {"PostToolUse": [{"matcher": "Agent|Task", "hooks": [
        {"type": "command", "command": "/x/swarmdeck hook post-tool-use", "timeout": 10}]}]}}
    again = merged(older, "/x/swarmdeck")
    assert again["hooks"]["PostToolUse"] == [{"hooks": [
        {"type": "command", "command": "/x/swarmdeck hook post-tool-use", "timeout": 10}]}]
    assert len(_ours(again)) == len(ENTRIES)
    assert without_ours(again) == {}
