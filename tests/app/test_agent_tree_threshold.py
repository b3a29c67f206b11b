"""A tool call in flight turns red after the watchdog's own threshold, not a number of its own."""

from __future__ import annotations

from pathlib import Path

from claude_lines import BASE, ClaudeTree, Lines
from swarmdeck.app.agent_tree import SessionTree, session_label
from swarmdeck.app.main import SwarmdeckApp
from swarmdeck.config import load_config
from swarmdeck.probes.claude.sessions import SessionsProbe
from swarmdeck.state import StateStore

SID = "7001aaaa-0000-4000-8000-000000000001"


def _session_with_a_tool_in_flight(home: Path):
    main = Lines(SID)
    main.prompt("go", 0)
    main.tool_use("toolu_1", "Bash", {"command": "make"}, 1)
    ClaudeTree(home / "claude").write_main(main)
    [session] = SessionsProbe(home / "claude").current()
    assert session.tool_in_flight is not None
    return session


def _red(label) -> bool:
    return any(str(span.style) == "bold red" for span in label.spans)


def test_the_tool_turns_red_after_tool_call_max(isolated_home: Path) -> None:
    session = _session_with_a_tool_in_flight(isolated_home)
    ten_seconds_in = BASE + 11
    assert _red(session_label(session, ten_seconds_in, tool_call_max=5))
    assert not _red(session_label(session, ten_seconds_in, tool_call_max=480))


async def test_the_agents_tree_takes_the_threshold_from_the_config(isolated_home: Path) -> None:
    (isolated_home / "config.toml").write_text("[watchdog]\ntool_call_max = 7.5\n")
    app = SwarmdeckApp(load_config(), StateStore.open_default())
    async with app.run_test(size=(160, 50)):
        assert app.query_one(SessionTree).tool_call_max == 7.5
