"""`claude doctor` reads the settings `swarmdeck hooks install` wrote and finds nothing wrong.

`claude doctor` runs without a terminal and exits 0 whatever it finds; a settings file it
cannot load shows as an "Invalid settings" section naming the file and the entry.
"""

from __future__ import annotations

import json

from claude_rig import Rig

INVALID = "Invalid settings"


def test_claude_doctor_finds_nothing_wrong_with_the_installed_hooks(rig: Rig) -> None:
    settings = json.loads((rig.config_dir / "settings.json").read_text())
    assert settings["hooks"], "hooks install wrote no hooks"
    said = rig.doctor()
    assert "Claude Code doctor" in said
    assert INVALID not in said, said
    assert "No installation issues found." in said, said


def test_claude_doctor_names_a_broken_hook_entry(rig: Rig) -> None:
    """The check above can fail: the same file with one entry broken is reported."""
    path = rig.config_dir / "settings.json"
    settings = json.loads(path.read_text())
    settings["hooks"]["PreToolUse"][0]["hooks"][0]["timeout"] = "5"
    path.write_text(json.dumps(settings))
    said = rig.doctor()
    assert INVALID in said, said
    assert f"{path} › hooks.PreToolUse.0.hooks.0" in said, said
