"""An idle room's Agents panel says in full where it looked for sessions, at every width: cut,
"no Claude Code sessions seen in ~/.claude/p…" named no folder a person could check."""

from __future__ import annotations

from pathlib import Path

import pytest
from pilot_waits import probed

from swarmdeck.app.main import SwarmdeckApp
from swarmdeck.config import load_config
from swarmdeck.state import StateStore
from swarmdeck.views.sessions import home_relative


@pytest.mark.parametrize("size", [(80, 24), (120, 35), (200, 60)])
async def test_the_empty_agents_panel_names_its_whole_folder(
    isolated_home: Path, size: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The folder as a home's is, ~/.claude/projects, whatever the length of the test's own.
    monkeypatch.setenv("HOME", str(isolated_home))
    claude = isolated_home / ".claude"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude))
    app = SwarmdeckApp(load_config(), StateStore.open_default())
    async with app.run_test(size=size) as pilot:
        await probed(pilot)
        agents = app.query_one("#agents")
        strips = app.screen._compositor.render_strips()
        region = agents.content_region
        shown = "".join("".join(strip.text[region.x:region.right].split())
                        for strip in strips[region.y:region.bottom])
    said = f"no Claude Code sessions seen in {home_relative(str(claude / 'projects'))}"
    assert said.endswith(" ~/.claude/projects")
    assert "".join(said.split()) in shown, shown
