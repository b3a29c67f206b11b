"""Recording hook events, the cached hook settings, and the heavy/light classification."""

from __future__ import annotations

import json
import marshal
import os
import re
import sqlite3
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from regex_patterns import HEAVY_PATTERNS

from swarmdeck import cache_settle, paths
from swarmdeck.errors import StateError
from swarmdeck.hook_events import APPLICATION_ID, trimmed
from swarmdeck.hooks.classify import heavy_match, may_match, workload_label
from swarmdeck.hooks.heavy import HEAVY_COMMANDS
from swarmdeck.hooks.payload import HookInput, event_name
from swarmdeck.hooks.prefilter import necessary_literals
from swarmdeck.hooks.record import record_event
from swarmdeck.hooks.settings import CACHE_NAME, HookSettings, hook_settings
from swarmdeck.state import APPLICATION_ID as STORE_APPLICATION_ID
from swarmdeck.state import StateStore


def test_recorded_payload_drops_tool_output_and_cuts_long_text() -> None:
    data = {
        "hook_event_name": "PostToolUse",
        "tool_name": "Agent",
        "tool_input": {"prompt": "p" * 10_000},
        "tool_response": {"status": "completed", "agentId": "a1", "content": ["x" * 50_000]},
    }
    small = trimmed(data)
    assert small["tool_response"] == {"status": "completed", "agentId": "a1"}
    assert len(small["tool_input"]["prompt"]) < 2100
    assert len(json.dumps(small)) < 16 * 1024


def test_first_event_creates_the_store_then_appends() -> None:
    hook = HookInput("Stop", {"session_id": "s", "hook_event_name": "Stop"})
    record_event(hook, now=10.0)
    record_event(hook, now=11.0)
    store = StateStore.open_default()
    with store.read() as conn:
        rows = conn.execute("SELECT event, received_at FROM hook_events").fetchall()
    assert [tuple(r) for r in rows] == [("Stop", 10.0), ("Stop", 11.0)]


def test_fast_path_writes_only_into_a_swarmdeck_file() -> None:
    assert APPLICATION_ID == STORE_APPLICATION_ID
    db = Path(paths.state_db_path())
    db.parent.mkdir(parents=True)
    foreign = sqlite3.connect(db)
    foreign.execute("CREATE TABLE hook_events (event, session_id, agent_id, tool_name, cwd,"
                    " payload, received_at)")
    foreign.execute("PRAGMA user_version = 5")
    foreign.commit()
    foreign.close()
    hook = HookInput("Stop", {"hook_event_name": "Stop"})
    with pytest.raises(StateError, match="another program"):
        record_event(hook)
    check = sqlite3.connect(db)
    assert check.execute("SELECT COUNT(*) FROM hook_events").fetchone()[0] == 0


def test_settings_are_cached_and_follow_config_changes(isolated_home: Path) -> None:
    first = hook_settings()
    assert first.heavy_patterns == ()
    assert first.heavy == HEAVY_COMMANDS
    assert (Path(paths.state_dir()) / CACHE_NAME).exists()
    assert hook_settings() == first
    (isolated_home / "config.toml").write_text(
        "[hooks]\nheavy_patterns = ['^slowthing']\nmax_running_subagents = 4\n"
    )
    changed = hook_settings()
    assert changed.heavy_patterns == ("^slowthing",)
    assert changed.literals == (("slowthing",),)
    assert changed.max_running_subagents == 4


def test_a_config_rewritten_with_its_size_and_mtime_is_read_again(isolated_home: Path) -> None:
    config = isolated_home / "config.toml"
    config.write_text("[hooks]\nheavy_patterns = ['^slowthing']\n")
    assert hook_settings().heavy_patterns == ("^slowthing",)
    before = config.stat()
    # `cp -p` onto it, or an edit in the same clock tick: only the change time tells.
    config.write_text("[hooks]\nheavy_patterns = ['^fastthing']\n")
    os.utime(config, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert hook_settings().heavy_patterns == ("^fastthing",)


def test_a_config_rewritten_within_the_tick_the_cache_was_written_in_is_read_again(
    isolated_home: Path, run_hook
) -> None:
    # On a file system with 1-second timestamps, a config rewritten with the same size in the
    # second the cache was written leaves every stat the key holds as it was (the change time
    # too). The cache below is that cache: the key it holds is the one the new text gives, and
    # its time is the config's own whole second. Only the cache's age can tell it is stale.
    from claude_lines import bash_payload

    config = isolated_home / "config.toml"
    second = (int(config.parent.stat().st_mtime) - 10) * 1_000_000_000
    config.write_text("[hooks]\nheavy_patterns = ['^slowthing']\n")
    os.utime(config, ns=(second, second))
    assert run_hook("pre-tool-use", bash_payload("fastthing --all")).stdout == ""
    cache = Path(paths.state_dir()) / CACHE_NAME
    assert cache.exists()
    config.write_text("[hooks]\nheavy_patterns = ['^fastthing']\n")
    os.utime(config, ns=(second, second))
    stored = marshal.loads(cache.read_bytes())
    stored["sources"] = cache_settle.identities(tuple(stored["sources"]))
    cache.write_bytes(marshal.dumps(stored))
    os.utime(cache, ns=(second, second))
    done = run_hook("pre-tool-use", bash_payload("fastthing --all"))
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert done.answer is not None  # heavy now: the new pattern, not the cached old one


def test_damaged_cache_is_recomputed() -> None:
    hook_settings()
    cache = Path(paths.state_dir()) / CACHE_NAME
    cache.write_bytes(b"{broken")
    assert hook_settings().heavy == HEAVY_COMMANDS
    assert marshal.loads(cache.read_bytes())["value"]["heavy"]


def _regex_settings() -> HookSettings:
    """The regexes that were the default, as a user's own `hooks.heavy_patterns`."""
    return HookSettings(HEAVY_PATTERNS, tuple(necessary_literals(p) for p in HEAVY_PATTERNS), 0)


def test_the_former_default_patterns_classify_commands() -> None:
    current = _regex_settings()
    heavy = [
        "pytest -q", "cd x && python -m pytest tests", "uv run pytest", "make -j8",
        "cargo build --release", "go test ./...", "npm run build", "ctest", "tox -e py311",
    ]
    light = ["ls -la", "git status", "grep pytest setup.cfg", "pip install pytest", "echo make"]
    for command in heavy:
        assert heavy_match(command, current) is not None, command
    for command in light:
        assert heavy_match(command, current) is None, command


def test_a_light_command_is_decided_without_running_any_pattern(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The prefilter is the light path's budget: a command holding none of a pattern's
    necessary literals never reaches the regex engine."""
    current = _regex_settings()
    searched: list[str] = []
    real_search = re.search

    def recording_search(pattern: str, text: str, flags: int = 0):  # type: ignore[no-untyped-def]
        searched.append(pattern)
        return real_search(pattern, text, flags)

    monkeypatch.setattr(re, "search", recording_search)
    for command in ("ls -la", "git status --short && ls -la src", "cat README.md"):
        assert heavy_match(command, current) is None
    assert searched == []
    assert heavy_match("pytest -q", current) is not None
    assert searched


def test_workload_label_names_the_program() -> None:
    assert workload_label("&& python -m pytest", "cd x && python -m pytest") == "pytest"
    assert workload_label("FOO=1 make -j8", "FOO=1 make -j8") == "make"
    assert workload_label("/usr/bin/cargo build", "/usr/bin/cargo build") == "cargo"


def test_workload_label_sees_past_every_wrapper_the_parser_sees_past() -> None:
    # One home for the wrappers (shell_parse.py): a label that stops at one the parser walks
    # through names the wrapper (`nohup`), not the work, as classify's own copy once did.
    from swarmdeck.hooks.shell_words import RUNNERS, WRAPPERS

    forms = [f"{wrapper} pytest -q" for wrapper in WRAPPERS]
    forms += [" ".join((runner, *subcommands[:1], "pytest -q")) for runner, subcommands
              in RUNNERS.items()]
    named = {form: workload_label(form, form) for form in forms}
    assert {form: name for form, name in named.items() if name != "pytest"} == {}
    assert workload_label("npm test", "npm test") == "npm"


def test_necessary_literals_of_simple_patterns() -> None:
    assert necessary_literals(r"(?:ab|cd)ef") == ("abef", "cdef")
    assert necessary_literals(r"x?yz") == ("yz",)
    assert necessary_literals(r"\d+") is None
    assert necessary_literals(r"(?i)pytest") is None
    assert necessary_literals(r"(unclosed") is None


WORDS = st.sampled_from(
    ["pytest", "py.test", "make", "-j8", "test", "cargo", "build", "go", "npm", "run", "bun",
     "tox", "nox", "mvn", "gradle", "ctest", "cmake", "--build", "ninja", "torchrun", "bench",
     "hyperfine", "uv", "python", "-m", "&&", ";", "|", "(", "`", "env", "X=1", "sudo", "ls",
     "./bin/", "time", "timeout", "5", "t", "check", "b", "nextest", "accelerate", "launch"]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(WORDS, min_size=1, max_size=8), st.sampled_from([" ", "  ", "\t"]))
def test_necessary_literals_never_hide_a_match(words: list[str], gap: str) -> None:
    command = gap.join(words)
    for pattern in HEAVY_PATTERNS:
        if re.search(pattern, command):
            assert may_match(command, necessary_literals(pattern)), (pattern, command)


def test_event_names_from_arguments() -> None:
    assert event_name("pre-tool-use") == "PreToolUse"
    assert event_name("PreToolUse") == "PreToolUse"
    assert event_name("session_start") == "SessionStart"
    assert event_name("Unknown") == "Unknown"
    assert event_name("PRE-TOOL-USE") == "PreToolUse"
    assert event_name("pre_tool_use") == "PreToolUse"
    assert event_name("subagentstop") == "SubagentStop"
    assert event_name(" Stop ") == "Stop"
    assert event_name("post-tool-use-failure") == "PostToolUseFailure"
    assert event_name("permission_request") == "PermissionRequest"
