"""`swarmdeck guards`, the `guards` figures of `status --json`, `hooks install --strict`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from swarmdeck.actions.guard_preset import with_strict_preset
from swarmdeck.hooks.guard_table import GUARDS

SWARMDECK = Path(sys.executable).parent / "swarmdeck"


def swarmdeck(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([SWARMDECK, *args], capture_output=True, text=True, timeout=60,
                          input=stdin, env=dict(os.environ))


def _deny_once(home: Path) -> None:
    payload = {"session_id": "s-guards", "transcript_path": "/nonexistent", "cwd": str(home),
               "hook_event_name": "PreToolUse", "tool_name": "Bash",
               "tool_input": {"command": "sleep 300; echo check"}}
    done = swarmdeck("hook", "pre-tool-use", stdin=json.dumps(payload))
    assert '"permissionDecision": "deny"' in done.stdout, done.stderr


def test_guards_lists_every_guard_with_its_mode_and_counts(isolated_home: Path) -> None:
    done = swarmdeck("guards", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["preset"] == "remind"
    assert data["heavy_threads"] == max(1, (os.cpu_count() or 2) - 1)
    assert [row["guard"] for row in data["guards"]] == [guard.name for guard in GUARDS]
    modes = {row["guard"]: row["mode"] for row in data["guards"]}
    assert modes["heavy-outside-cage"] == "remind" and modes["timer"] == "off"
    (isolated_home / "config.toml").write_text('[guards]\npreset = "strict"\n')
    _deny_once(isolated_home)
    rows = {row["guard"]: row for row in json.loads(swarmdeck("guards", "--json").stdout)["guards"]}
    assert rows["timer"]["mode"] == "deny" and rows["timer"]["denied_24h"] == 1
    assert rows["run-scope"]["mode"] == "off"
    text = swarmdeck("guards").stdout
    assert "preset: strict" in text and "timer" in text


def test_status_json_counts_the_guards(isolated_home: Path) -> None:
    (isolated_home / "config.toml").write_text('[guards]\npreset = "strict"\n')
    _deny_once(isolated_home)
    done = swarmdeck("status", "--json")
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)["guards"]
    # The snapshot's contract (DESIGN.md): each top-level key is a list of flat objects.
    assert isinstance(rows, list) and all(
        set(row) == {"name", "mode", "reminded_24h", "denied_24h"} for row in rows)
    by_name = {row["name"]: row for row in rows}
    assert by_name["timer"] == {"name": "timer", "mode": "deny", "reminded_24h": 0,
                                "denied_24h": 1}


def test_hooks_install_strict_writes_the_preset_and_keeps_the_file(
    isolated_home: Path,
) -> None:
    config = isolated_home / "config.toml"
    config.write_text("# mine\n[memory]\nreserve = \"1G\"\n\n[guards]\ntimer = \"off\"\n")
    done = swarmdeck("hooks", "install", "--strict")
    assert done.returncode == 0, done.stderr
    text = config.read_text()
    assert text.startswith("# mine\n") and 'preset = "strict"' in text and 'timer = "off"' in text
    listed = json.loads(swarmdeck("guards", "--json").stdout)["guards"]
    rows = {row["guard"]: row["mode"] for row in listed}
    assert rows["heavy-outside-cage"] == "deny" and rows["timer"] == "off"
    settings = json.loads((isolated_home / "claude" / "settings.json").read_text())
    matchers = [group.get("matcher") for group in settings["hooks"]["PreToolUse"]]
    assert "Write|Edit|MultiEdit|NotebookEdit|SendMessage|CronCreate" in matchers
    again = swarmdeck("hooks", "install", "--strict")
    assert "already set" in again.stdout


def test_the_strict_preset_is_written_into_any_shape_of_file() -> None:
    assert with_strict_preset("") == '[guards]\npreset = "strict"\n'
    assert with_strict_preset("[ui]\nbell = true") == (
        '[ui]\nbell = true\n\n[guards]\npreset = "strict"\n'
    )
    assert with_strict_preset('[guards]\npreset = "remind"\n[ui]\n') == (
        '[guards]\npreset = "strict"\n[ui]\n'
    )


def test_hooks_install_strict_with_project_is_refused_in_one_line(
    isolated_home: Path, tmp_path: Path
) -> None:
    """The preset is the user config's, so for every project: --project cannot scope it."""
    config = isolated_home / "config.toml"
    config.write_text("[ui]\n")
    project = tmp_path / "proj"
    project.mkdir()
    done = swarmdeck("hooks", "install", "--project", str(project), "--strict")
    assert done.returncode == 251, done.stdout  # USAGE (DESIGN.md)
    assert done.stderr.count("\n") == 1 and "--project" in done.stderr, done.stderr
    assert config.read_text() == "[ui]\n"
    assert not (project / ".claude").exists()


def test_hooks_install_for_the_user_and_a_project_at_once_is_refused_in_one_line(
    isolated_home: Path, tmp_path: Path
) -> None:
    done = swarmdeck("hooks", "install", "--user", "--project", str(tmp_path))
    assert done.returncode == 251, done.stdout  # USAGE (DESIGN.md)
    assert done.stderr.count("\n") == 1, done.stderr
    assert "--user and --project" in done.stderr, done.stderr
    assert not (tmp_path / ".claude").exists()


def test_hooks_install_strict_writes_through_a_symlinked_config(
    isolated_home: Path, tmp_path: Path
) -> None:
    real = tmp_path / "dotfiles" / "swarmdeck.toml"
    real.parent.mkdir()
    real.write_text("[ui]\n")
    link = isolated_home / "config.toml"
    link.unlink()
    link.symlink_to(real)
    done = swarmdeck("hooks", "install", "--strict")
    assert done.returncode == 0, done.stderr
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert 'preset = "strict"' in real.read_text()
