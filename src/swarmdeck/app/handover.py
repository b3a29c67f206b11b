"""The handover of a subagent (`h` on it in the Agents panel): what `swarmdeck handover` prints.

A full screen of text to read or copy into a new dispatch: the stopped subagent's task, files,
commands and last message, read from its transcript (probes/claude/handover.py).
"""

from __future__ import annotations

from pathlib import Path

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Static

from swarmdeck.probes.claude.handover import HandoverError, read_handover


class HandoverScreen(Screen[None]):
    """One subagent's handover; `esc` goes back to the panels."""

    BINDINGS = [Binding("escape", "app.pop_screen", "Back")]

    def __init__(self, claude_dir: Path, agent_id: str) -> None:
        """Args:
        claude_dir: The Claude Code folder the transcripts are read from.
        agent_id: The subagent to hand over.
        """
        super().__init__(id="handover")
        self.claude_dir = claude_dir
        self.agent_id = agent_id

    def compose(self) -> ComposeResult:
        try:
            text = read_handover(self.claude_dir, self.agent_id).text()
        except HandoverError as error:
            text = str(error)
        with VerticalScroll(classes="detail panel") as box:
            box.border_title = f"Handover of {self.agent_id} (swarmdeck handover {self.agent_id})"
            yield Static(text, id="handover-text", markup=False)
        yield Footer()
