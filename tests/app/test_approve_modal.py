"""The approve modal reads as a person writes: one process or N processes, and a long command
wraps under itself, not back at the left edge."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixed_room import fix_trees, fixed_app
from pilot_waits import probed, until
from rendered import plain
from textual.app import App
from textual.widgets import Button, Static

from swarmdeck.app.approve import ApproveScreen
from swarmdeck.app.watchdog import WatchdogPanel
from swarmdeck.probes.store_rows import KillRequest
from swarmdeck.watchdog.kills import TreeMember

LONG = "bash -c " + " ".join(f"step{n}" for n in range(40))


def request() -> KillRequest:
    return KillRequest(id=3, job_id=None, host="gpu-box-1", pid=4242, start_ticks=1, user="me",
                       command=LONG, reason="runaway", state="pending", requested_at=0.0)


async def shown(members: list[TreeMember]) -> tuple[str, list[str], str, set[str]]:
    app: App[None] = App()
    async with app.run_test(size=(100, 40)) as pilot:
        await app.push_screen(ApproveScreen(request(), members))
        await pilot.pause()
        modal = app.screen
        tree = plain(modal.query_one("#approve-tree", Static).content)
        title = str(modal.query_one("#approve-title").render())
        buttons = {str(button.label) for button in modal.query(Button)}
        facts = modal.query_one("#approve-facts")
        strips = app.screen._compositor.render_strips()
        region = facts.content_region
        lines = [strip.text[region.x:region.right] for strip in strips[region.y:region.bottom]]
    return tree, lines, title, buttons


async def test_one_process_is_singular_and_many_plural() -> None:
    one, _, title, buttons = await shown([TreeMember(4242, "bash", "bash")])
    assert one.startswith("this process will be stopped:"), one
    assert "Approve: stop it" in buttons
    assert title == "Approve kill request 3: stop its process tree?"
    two, _, _, buttons = await shown(
        [TreeMember(4242, "bash", "bash"), TreeMember(4243, "sleep", "sleep")]
    )
    assert two.startswith("these 2 processes will be stopped:"), two
    assert "Approve: stop them" in buttons


async def test_a_long_command_wraps_under_itself() -> None:
    _, lines, _, _ = await shown([TreeMember(4242, "bash", LONG)])
    at = next(n for n, line in enumerate(lines) if line.startswith("command:"))
    indent = lines[at].index("bash")
    assert lines[at + 1][:indent].strip() == "" and lines[at + 1][indent:].startswith("step"), lines


async def test_a_request_whose_process_is_gone_offers_to_dismiss_it_not_to_stop_it() -> None:
    app: App[None] = App()
    async with app.run_test(size=(100, 40)) as pilot:
        await app.push_screen(ApproveScreen(request(), []))
        await pilot.pause()
        modal = app.screen
        tree = plain(modal.query_one("#approve-tree", Static).content)
        title = str(modal.query_one("#approve-title").render())
        buttons = {str(button.label) for button in modal.query(Button)}
    assert title == "Kill request 3: its process has already ended"
    assert "pid 4242 has already ended: there is nothing left to stop" in tree, tree
    assert "0 processes" not in tree
    assert "Approve: stop them" not in buttons and "Dismiss the request" in buttons


@pytest.mark.parametrize("size", [(80, 24), (120, 35), (200, 60)])
async def test_cancel_is_focused_enter_on_it_says_cancelled_and_y_confirms(
    isolated_home: Path, size: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The README says: `y` opens the modal with Cancel focused; Enter (or Escape, `n`) there
    cancels, and the room says so; `y` in the modal approves."""
    approved: list[int] = []
    monkeypatch.setattr(WatchdogPanel, "run_approval",
                        lambda self, request_id: approved.append(request_id))
    app = fixed_app(isolated_home, watched=True)
    async with app.run_test(size=size) as pilot:
        fix_trees(app)
        await probed(pilot)
        await pilot.press("6", "y")
        await until(pilot, lambda: isinstance(app.screen, ApproveScreen), "the approve modal")
        assert app.focused is app.screen.query_one("#cancel", Button)
        await pilot.press("enter")
        await until(pilot, lambda: not isinstance(app.screen, ApproveScreen), "it closed")
        said = [str(n.message) for n in app._notifications]
        assert any("cancelled" in line and "nothing was signalled" in line for line in said), said
        assert approved == []
        await pilot.press("y")
        await until(pilot, lambda: isinstance(app.screen, ApproveScreen), "the modal again")
        await pilot.press("y")
        await until(pilot, lambda: not isinstance(app.screen, ApproveScreen), "it approved")
        assert len(approved) == 1
