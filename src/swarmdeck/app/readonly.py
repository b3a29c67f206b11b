"""Read-only mode (`--readonly`), decided in one place: which keys are offered, and what a key
that would change something says instead. The app and every panel whose keys change anything
ask the same `WriteGate`."""

from __future__ import annotations

from dataclasses import dataclass

from textual.dom import DOMNode

NOTHING_CHANGED = "read-only: nothing is changed (started with --readonly)"
REFUSED = "read-only: {} refused"


@dataclass(frozen=True, slots=True)
class WriteGate:
    """Whether the control room may change anything."""

    readonly: bool

    def offers(self, changes: bool) -> bool:
        """Whether a key (an action) is offered, in the footer and as a key: read-only, none
        that `changes` anything is."""
        return not (self.readonly and changes)

    def refuses(self, node: DOMNode, action: str | None = None) -> bool:
        """True, after `node` says so, when read-only: `action` names what is refused, else
        the notification says nothing is changed."""
        if not self.readonly:
            return False
        what = NOTHING_CHANGED if action is None else REFUSED.format(action.replace("_", " "))
        node.notify(what, severity="warning")
        return True
