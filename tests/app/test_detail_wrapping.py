"""A detail view's long values (a transcript path, a long command) wrap under their own column
at a separator, never cut mid-word, and wrap again when the terminal is resized."""

from __future__ import annotations

import os
from pathlib import Path

from pilot_waits import until

from claude_lines import ClaudeTree, Lines
from swarmdeck.app.agent_tree import SessionTree
from swarmdeck.app.detail import AgentDetail, wrapped
from swarmdeck.app.main import SwarmdeckApp
from swarmdeck.config import load_config
from swarmdeck.state import StateStore

SID = "b3e14352-d1f8-43bf-85fe-05ee52044d77"


def test_a_long_path_breaks_after_a_slash_or_a_dash() -> None:
    path = "/tmp/swarmdeck-demo-q66764m1/claude/projects/-tmp-swarmdeck-demo-q66764m1-work-cage/"
    lines = wrapped(path + SID + ".jsonl", 40)
    assert "".join(lines) == path + SID + ".jsonl"
    assert all(len(line) <= 40 for line in lines)
    assert all(line.endswith(("/", "-")) for line in lines[:-1])


def test_words_break_at_spaces_which_the_break_drops() -> None:
    assert wrapped("make -j8 all check install", 12) == ["make -j8 all", "check", "install"]
    assert wrapped("short", 40) == ["short"]
    assert wrapped("two\nlines", 40) == ["two", "lines"]


async def test_a_sessions_transcript_path_wraps_under_its_column(isolated_home: Path) -> None:
    tree = ClaudeTree(isolated_home / "claude")
    deep = "/work/" + "/".join(f"folder-number-{n}" for n in range(6))
    main = Lines(SID, cwd=deep)
    main.prompt("look around", 0)
    transcript = tree.write_main(main)
    tree.write_pid_file(os.getpid(), SID, cwd=deep)
    app = SwarmdeckApp(load_config(), StateStore.open_default())
    async with app.run_test(size=(120, 35)) as pilot:
        sessions = app.query_one(SessionTree)
        await until(pilot, lambda: sessions.root.children, "the session")
        await pilot.press("3", "enter")
        assert isinstance(app.screen, AgentDetail)
        for width in (120, 70):
            await pilot.resize_terminal(width, 35)
            await pilot.pause()
            facts = str(app.screen.query_one("#agent-facts").render()).splitlines()
            start = next(n for n, line in enumerate(facts) if "transcript" in line)
            lines = [facts[start].split("transcript  ", 1)[1]]
            lines += [line[24:] for line in facts[start + 1:] if line.startswith(" " * 24)]
            assert "".join(line.rstrip() for line in lines) == str(transcript)
            assert all(len(line.rstrip()) + 24 <= width - 4 for line in lines), width
