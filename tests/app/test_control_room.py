"""The control room by keyboard: number keys and tab move between panels, the focused panel
shows it, and a session waiting for the person is marked and counted in the header."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pilot_waits import probed, until
from textual.widgets import Label

from claude_lines import ClaudeTree, Lines
from ledger_rows import add_job
from swarmdeck.app.agent_tree import SessionTree
from swarmdeck.app.detail import AgentDetail, JobDetail
from swarmdeck.app.main import PANELS, SwarmdeckApp
from swarmdeck.config import load_config
from swarmdeck.probes.procs import start_ticks
from swarmdeck.state import StateStore

SID = "aaaa1111-0000-4000-8000-000000000010"


def focused_panel(app: SwarmdeckApp) -> str | None:
    focused = app.focused
    if focused is None:
        return None
    return next((a.id for a in focused.ancestors_with_self if a.id in PANELS), None)


@pytest.mark.parametrize("size", [(120, 35), (200, 60)], ids=["120x35", "200x60"])
async def test_number_keys_focus_a_panel_and_tab_cycles_through_them(
    size: tuple[int, int],
) -> None:
    app = SwarmdeckApp(load_config(), StateStore.open_default())
    async with app.run_test(size=size) as pilot:
        await probed(pilot)
        for n, panel in enumerate(PANELS, start=1):
            await pilot.press(str(n))
            assert focused_panel(app) == panel
            assert app.query_one(f"#{panel}").has_pseudo_class("focus-within")
        await pilot.press("1")
        for panel in [*PANELS[1:], PANELS[0]]:
            await pilot.press("tab")
            assert focused_panel(app) == panel
        await pilot.press("shift+tab")
        assert focused_panel(app) == PANELS[-1]
        for panel_id in PANELS:
            assert app.query_one(f"#{panel_id}").region.height >= 3, panel_id


async def test_a_session_waiting_for_the_person_is_marked_and_counted(
    isolated_home: Path,
) -> None:
    tree = ClaudeTree(isolated_home / "claude")
    main = Lines(SID)
    main.prompt("deploy it", 0)
    tree.write_main(main)
    tree.write_pid_file(os.getpid(), SID, procStart=str(start_ticks(os.getpid())),
                        status="waiting", waitingFor="permission to run git push")
    app = SwarmdeckApp(load_config(), StateStore.open_default())
    async with app.run_test(size=(120, 35)) as pilot:
        sessions = app.query_one(SessionTree)
        await until(pilot, lambda: sessions.root.children, "the session")
        label = str(sessions.root.children[0].label)
        assert label.startswith("⚑ ")
        assert "waiting for you: permission to run git push" in label
        await until(pilot, lambda: "1 waiting for you" in app.sub_title, "the count")
        assert app.sub_title == "⚑ 1 waiting for you: proj"


async def test_a_notification_hook_asking_for_the_person_marks_the_session_until_answered(
    isolated_home: Path,
) -> None:
    (isolated_home / "config.toml").write_text("[ui]\nrefresh_interval = 0.2\n")
    tree = ClaudeTree(isolated_home / "claude")
    main = Lines(SID)
    main.prompt("deploy it", 0)
    tree.write_main(main)
    tree.write_pid_file(os.getpid(), SID, procStart=str(start_ticks(os.getpid())), status="busy")
    app = SwarmdeckApp(load_config(), StateStore.open_default())
    async with app.run_test(size=(120, 35)) as pilot:
        sessions = app.query_one(SessionTree)
        await until(pilot, lambda: sessions.root.children, "the session")
        assert not str(sessions.root.children[0].label).startswith("⚑ ")
        _hook("Notification", notification_type="permission_prompt",
              message="Claude needs your permission to use Bash")
        await until(pilot, lambda: "1 waiting for you" in app.sub_title, "the count")
        label = str(sessions.root.children[0].label)
        assert "waiting for you: Claude needs your permission to use Bash" in label
        _hook("PostToolUse", tool_name="Bash", tool_use_id="toolu_1")
        await until(pilot, lambda: "waiting" not in app.sub_title, "the answer")
        assert not str(sessions.root.children[0].label).startswith("⚑ ")


def _hook(event: str, **fields: object) -> None:
    """The hook Claude Code would call, as a real `swarmdeck hook` process."""
    payload = {"hook_event_name": event, "session_id": SID, "cwd": "/work/proj", **fields}
    done = subprocess.run(
        [str(Path(sys.executable).parent / "swarmdeck"), "hook", event],
        input=json.dumps(payload), capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 0, done.stderr


async def test_sessions_waiting_for_the_person_are_named_the_longest_waiting_first(
    isolated_home: Path,
) -> None:
    tree = ClaudeTree(isolated_home / "claude")
    now = time.time()
    sleepers = [subprocess.Popen(["sleep", "60"]) for _ in range(2)]
    try:
        for n, (title, waited) in enumerate((("recent ask", 60), ("old ask", 600))):
            sid = f"{n}aaa1111-0000-4000-8000-000000000010"
            main = Lines(sid, cwd=f"/work/{title.replace(' ', '-')}")
            main.prompt("deploy it", 0)
            tree.write_main(main)
            tree.write_pid_file(sleepers[n].pid, sid, status="waiting", cwd=main.cwd,
                                waitingFor="permission", updatedAt=int((now - waited) * 1000))
        app = SwarmdeckApp(load_config(), StateStore.open_default())
        async with app.run_test(size=(120, 35)) as pilot:
            await until(pilot, lambda: "2 waiting for you" in app.sub_title, "the count")
            assert "2 waiting for you, the longest: old-ask (10m)" in app.sub_title
            line = app.query_one("#agents-waiting", Label)
            assert line.display
            assert str(line.render()) == (
                "⚑ 2 waiting for you, longest first: old-ask (10m) · recent-ask (1m)"
            )
    finally:
        for sleeper in sleepers:
            sleeper.kill()
            sleeper.wait()


async def test_enter_on_a_job_shows_its_detail_and_output_and_escape_goes_back(
    isolated_home: Path,
) -> None:
    output = isolated_home / "job.out"
    output.write_text("".join(f"line {n}\n" for n in range(40)))
    store = StateStore.open_default()
    job_id = add_job(store, label="compile", state="done", argv=["make", "-j8", "all"],
                     cwd="/work/proj", exit_code=250, outcome="own cap", peak=2 << 20,
                     hit_ceiling=1, output_path=str(output), started_at=1.0, ended_at=61.0)
    app = SwarmdeckApp(load_config(), store)
    async with app.run_test(size=(120, 35)) as pilot:
        await probed(pilot)
        await pilot.press("2", "enter")
        assert isinstance(app.screen, JobDetail) and app.screen.job_id == job_id
        await pilot.pause()
        facts = str(app.screen.query_one("#job-facts").render())
        assert "make -j8 all" in facts and "/work/proj" in facts and "own cap 250" in facts
        assert "ceiling" in facts
        shown = str(app.screen.query_one("#job-output").render())
        assert "line 39" in shown and "line 19" not in shown
        await pilot.press("escape")
        assert not isinstance(app.screen, JobDetail)


async def test_a_number_key_on_a_detail_view_goes_back_to_that_panel_and_over_help_does_nothing(
    isolated_home: Path,
) -> None:
    store = StateStore.open_default()
    add_job(store, label="compile", state="done", argv=["make"], cwd="/work/proj", exit_code=0,
            outcome="ok", started_at=1.0, ended_at=2.0)
    app = SwarmdeckApp(load_config(), store)
    async with app.run_test(size=(120, 35)) as pilot:
        await probed(pilot)
        await pilot.press("2", "enter")
        assert isinstance(app.screen, JobDetail)
        await pilot.press("5")
        assert app.screen is app.screen_stack[0]
        assert focused_panel(app) == PANELS[4]
        await pilot.press("question_mark")
        help_screen = app.screen
        assert help_screen is not app.screen_stack[0]
        await pilot.press("2")
        assert app.screen is help_screen and app.is_running


async def test_enter_on_a_session_shows_its_detail(isolated_home: Path) -> None:
    tree = ClaudeTree(isolated_home / "claude")
    main = Lines(SID, branch="feat/x")
    main.prompt("look around", 0)
    tree.write_main(main)
    tree.write_pid_file(os.getpid(), SID)
    app = SwarmdeckApp(load_config(), StateStore.open_default())
    async with app.run_test(size=(120, 35)) as pilot:
        sessions = app.query_one(SessionTree)
        await until(pilot, lambda: sessions.root.children, "the session")
        await pilot.press("3", "enter")
        assert isinstance(app.screen, AgentDetail)
        await pilot.pause()
        facts = str(app.screen.query_one("#agent-facts").render())
        assert SID in facts and "feat/x" in facts
        await pilot.press("escape")
        assert not isinstance(app.screen, AgentDetail)


class BellCounter(SwarmdeckApp):
    """The real app, counting its terminal bells instead of ringing them."""

    rung = 0

    def bell(self) -> None:
        self.rung += 1


def _waiting_session(home: Path) -> None:
    tree = ClaudeTree(home / "claude")
    main = Lines(SID)
    main.prompt("deploy it", 0)
    tree.write_main(main)
    tree.write_pid_file(os.getpid(), SID, procStart=str(start_ticks(os.getpid())),
                        status="waiting", waitingFor="permission to run git push")


async def test_with_ui_bell_a_session_that_starts_waiting_rings_once(isolated_home: Path) -> None:
    (isolated_home / "config.toml").write_text("[ui]\nbell = true\nrefresh_interval = 0.1\n")
    _waiting_session(isolated_home)
    app = BellCounter(load_config(), StateStore.open_default())
    async with app.run_test(size=(120, 35)) as pilot:
        await until(pilot, lambda: "1 waiting for you" in app.sub_title, "the count")
        taken = app.snapshots_taken
        await until(pilot, lambda: app.snapshots_taken >= taken + 3, "more refreshes")
        assert app.rung == 1


async def test_without_ui_bell_the_terminal_stays_quiet(isolated_home: Path) -> None:
    _waiting_session(isolated_home)
    app = BellCounter(load_config(), StateStore.open_default())
    async with app.run_test(size=(120, 35)) as pilot:
        await until(pilot, lambda: "1 waiting for you" in app.sub_title, "the count")
        assert app.rung == 0


async def test_a_sessions_detail_lists_the_jobs_it_launched(isolated_home: Path) -> None:
    tree = ClaudeTree(isolated_home / "claude")
    main = Lines(SID)
    main.prompt("build it", 0)
    tree.write_main(main)
    tree.write_pid_file(os.getpid(), SID)
    store = StateStore.open_default()
    mine = add_job(store, label="its build", state="done", exit_code=0, outcome="ok",
                   session_id=SID, agent_id="a1")
    add_job(store, label="someone else's", state="done", exit_code=0, outcome="ok",
            session_id="bbbb2222-0000-4000-8000-000000000020")
    app = SwarmdeckApp(load_config(), store)
    async with app.run_test(size=(120, 35)) as pilot:
        sessions = app.query_one(SessionTree)
        await until(pilot, lambda: sessions.root.children, "the session")
        await probed(pilot)
        await pilot.press("3", "enter")
        assert isinstance(app.screen, AgentDetail)
        await pilot.pause()
        facts = str(app.screen.query_one("#agent-facts").render())
        assert f"#{mine} its build" in facts and "someone else's" not in facts
