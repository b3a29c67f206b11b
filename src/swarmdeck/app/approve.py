"""The approve modal: everything a person needs before a process tree is stopped, Cancel focused.

It shows the host, pid, user, command and reason of the kill request and the processes the stop
would signal, as they are now. Only the Approve button approves (a second `y` does not: a key
pressed twice by mistake must not stop anything); Escape, Cancel and `n` leave it all running.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static

from swarmdeck.probes.records import KillRequest
from swarmdeck.watchdog.kills import TreeMember

SHOWN = 12


class ApproveScreen(ModalScreen[bool]):
    """Dismissed with True only when the person approved."""

    BINDINGS = [
        Binding("escape,n", "cancel", "Cancel"),
    ]
    DEFAULT_CSS = """
    ApproveScreen {
        align: center middle;
    }
    #approve-box {
        width: 90;
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
        members = [f"  {m.pid:>7}  {m.comm:<15} {m.command[:60]}" for m in self.members[:SHOWN]]
        if len(self.members) > SHOWN:
            members.append(f"  … and {len(self.members) - SHOWN} more")
        if not members:
            members = ["  (no process with that pid and start ticks is running now)"]
        with Vertical(id="approve-box"):
            yield Label(f"Stop kill request {r.id}'s process tree?", id="approve-title")
            yield Static(
                f"host:    {r.host}\npid:     {r.pid} (start ticks {r.start_ticks})\n"
                f"user:    {r.user or '?'}\ncommand: {r.command[:200]}\nreason:  {r.reason}",
                id="approve-facts",
            )
            yield Static(
                f"these {len(self.members)} processes will be stopped:\n" + "\n".join(members),
                id="approve-tree",
            )
            with Horizontal(id="approve-buttons"):
                yield Button("Cancel", id="cancel", variant="primary")
                yield Button("Approve: stop them", id="approve", variant="error")

    def on_mount(self) -> None:
        self.query_one("#cancel", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "approve")

    def action_cancel(self) -> None:
        self.dismiss(False)
