"""The approve modal: everything a person needs before a process tree is stopped, Cancel focused.

It shows the host, pid, user, command and reason of the kill request and the processes the stop
would signal, as they are now. `y` in the modal (or the Approve button) approves: the `y` that
opened it asked to review, this one confirms what was reviewed, as a shell's y/N does. Cancel
is focused, so Enter leaves it all running, as do Escape and `n`; the room says it cancelled.
When the request's process has ended already there is nothing to stop: the modal says so and
offers to dismiss the request instead (recorded as "already gone"; nothing is signalled).
"""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static

from swarmdeck.printable import printable
from swarmdeck.probes.store_rows import KillRequest
from swarmdeck.watchdog.kills import TreeMember

SHOWN = 12


def tree_lines(members: list[TreeMember]) -> Table:
    """The processes a stop would signal, one per line: pid, name, command; a long command
    wraps under itself, never back to the box's edge."""
    grid = Table.grid(padding=(0, 1), pad_edge=True)
    grid.add_column(justify="right", no_wrap=True, min_width=8)
    grid.add_column(no_wrap=True, min_width=15)
    grid.add_column(overflow="fold")
    for member in members[:SHOWN]:
        grid.add_row(
            str(member.pid), Text(printable(member.comm)), Text(printable(member.command[:200]))
        )
    if len(members) > SHOWN:
        grid.add_row("", "", Text(f"… and {len(members) - SHOWN} more"))
    return grid


def facts(request: KillRequest) -> Table:
    """The request's facts, a name and its value per line; a long value wraps under itself."""
    grid = Table.grid(padding=(0, 1))
    grid.add_column(no_wrap=True)
    grid.add_column(overflow="fold")
    for name, value in (
        ("host:", request.host),
        ("pid:", f"{request.pid} (start ticks {request.start_ticks})"),
        ("user:", request.user or "?"),
        ("command:", request.command[:200]),
        ("reason:", request.reason),
    ):
        grid.add_row(name, Text(printable(value)))
    return grid


class ApproveScreen(ModalScreen[bool]):
    """Dismissed with True only when the person approved (or dismissed a request whose
    process is gone, which approving records as already gone)."""

    BINDINGS = [
        Binding("escape,n", "cancel", "Cancel"),
        Binding("y", "confirm", "Approve"),
    ]
    DEFAULT_CSS = """
    ApproveScreen {
        align: center middle;
    }
    #approve-box {
        width: 90;
        max-width: 100%;
        max-height: 100%;
        height: auto;
        border: thick $error;
        background: $surface;
        padding: 1 2;
    }
    #approve-tree {
        color: $text-muted;
        margin: 1 0;
    }
    #approve-buttons {
        height: auto;
        align-horizontal: right;
    }
    #approve-buttons Button {
        margin-left: 2;
    }
    """

    def __init__(self, request: KillRequest, tree: list[TreeMember]) -> None:
        super().__init__()
        self.request = request
        self.members = tree

    def compose(self) -> ComposeResult:
        r = self.request
        gone = self.gone
        with VerticalScroll(id="approve-box"):
            title = (f"Kill request {r.id}: its process has already ended" if gone else
                     f"Approve kill request {r.id}: stop its process tree?")
            yield Label(title, id="approve-title")
            yield Static(facts(r), id="approve-facts")
            count = len(self.members)
            these = "this process" if count == 1 else f"these {count} processes"
            yield Static(
                Text(f"pid {r.pid} has already ended: there is nothing left to stop; dismiss"
                     " the request to close it (nothing is signalled)") if gone else
                Group(Text(f"{these} will be stopped:"), tree_lines(self.members)),
                id="approve-tree",
            )
            with Horizontal(id="approve-buttons"):
                yield Button("Cancel", id="cancel", variant="primary")
                if gone:
                    yield Button("Dismiss the request", id="dismiss")
                else:
                    them = "it" if len(self.members) == 1 else "them"
                    yield Button(f"Approve: stop {them}", id="approve", variant="error")

    @property
    def gone(self) -> bool:
        """The request's process ended: no tree on this host (a cluster job's processes run
        out of sight, so an empty tree says nothing about it)."""
        return not self.members and self.request.slurm_job_id is None

    def on_mount(self) -> None:
        self.query_one("#cancel", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id in ("approve", "dismiss"))

    def action_cancel(self) -> None:
        self.dismiss(False)

    def action_confirm(self) -> None:
        """`y`: what the Approve (or, for a process gone, the Dismiss) button does."""
        self.dismiss(True)
