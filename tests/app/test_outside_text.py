"""Labels, commands, folders and job output come from agents: the control room shows their
control characters as escapes (Textual passes an ESC in a DataTable cell or a Static through to
the terminal as it is), so none reaches the person's terminal and none splits a row."""

from __future__ import annotations

import os
from pathlib import Path

from pilot_waits import probed, until
from textual.widget import Widget

from claude_lines import ClaudeTree, Lines
from ledger_rows import add_job
from swarmdeck.app.agent_tree import SessionTree
from swarmdeck.app.detail import JobDetail
from swarmdeck.app.jobs import JobsPanel
from swarmdeck.app.keyed_table import KeyedTable
from swarmdeck.app.main import SwarmdeckApp
from swarmdeck.config import load_config
from swarmdeck.state import StateStore

LABEL = "two\nlines\x1b[31mred"


def drawn(widget: Widget) -> str:
    """What the widget draws, line by line, as the terminal would receive its text."""
    return "\n".join(
        "".join(segment.text for segment in widget.render_line(y))
        for y in range(widget.size.height)
    )


async def test_a_jobs_label_command_folder_and_output_are_drawn_escaped(tmp_path: Path) -> None:
    output = tmp_path / "job.out"
    output.write_text("compiled\n\x1b[2Jcleared\n")
    store = StateStore.open_default()
    add_job(store, label=LABEL, state="done", exit_code=0, outcome="ok",
            argv=["echo", LABEL], cwd="/w/\x1b]0;retitled\x07", output_path=str(output))
    app = SwarmdeckApp(load_config(), store)
    async with app.run_test(size=(160, 40)) as pilot:
        await probed(pilot)
        table = app.query_one(JobsPanel).query_one(KeyedTable)
        await until(pilot, lambda: "two ⏎ " in drawn(table), "the job's row")
        assert "\x1b" not in drawn(table)
        await pilot.press("2", "enter")
        screen = app.screen
        assert isinstance(screen, JobDetail)
        facts = screen.query_one("#job-facts")
        await until(pilot, lambda: "command" in drawn(facts), "the job's facts")
        assert "\x1b" not in drawn(facts)
        assert "lines\\x1b[31mred" in drawn(facts) and "/w/\\x1b]0;retitled" in drawn(facts)
        out = screen.query_one("#job-output")
        await until(pilot, lambda: "compiled" in drawn(out), "the job's output")
        assert drawn(out).splitlines()[:2] == ["compiled", "\\x1b[2Jcleared"]


async def test_a_sessions_branch_and_a_subagents_description_are_drawn_escaped(
    isolated_home: Path,
) -> None:
    sid = "abcd7777-0000-4000-8000-000000000021"
    tree = ClaudeTree(isolated_home / "claude")
    main = Lines(sid, branch="feat/\x1b[5mblink")
    main.prompt("fan out", 0)
    main.agent("toolu_a", "Survey\x1b[2J the web", "Survey.", 1, subagent_type="Explore")
    tree.write_main(main)
    tree.write_pid_file(os.getpid(), sid)
    app = SwarmdeckApp(load_config(), StateStore.open_default())
    async with app.run_test(size=(180, 50)) as pilot:
        sessions = app.query_one(SessionTree)
        await until(pilot, lambda: "Survey" in drawn(sessions), "the tree")
        assert "\x1b" not in drawn(sessions)
        assert "feat/\\x1b[5mblink" in drawn(sessions)
        assert "Survey\\x1b[2J the web" in drawn(sessions)


async def test_a_notification_shows_outside_text_as_written() -> None:
    """A notification carries paths, commands and reasons: brackets in them (a `[tmp]` or `[/]`
    that markup would swallow) are text, and control characters are escapes."""

    app = SwarmdeckApp(load_config(), StateStore.open_default())
    async with app.run_test(size=(160, 40), notifications=True) as pilot:
        await probed(pilot)
        app.notify("released the stale lock of /w/[tmp]/[/]x")
        app.query_one(JobsPanel).notify("not rerun: [bold]cd\x1b[2J failed")
        await until(pilot, lambda: len(app.query("Toast")) == 2, "both notifications")
        shown = [drawn(toast) for toast in app.query("Toast")]
        assert any("/w/[tmp]/[/]x" in text for text in shown), shown
        assert any("[bold]cd\\x1b[2J failed" in text for text in shown), shown
