"""What the command palette offers beside Textual's own commands: every key the help lists, by
name (the app's bindings, each action and, unless read-only, each panel's keys). A panel's key
chosen there does what the key does where the focus is, as if pressed with the palette closed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import partial

from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.widget import Widget

from swarmdeck.app import commands
from swarmdeck.app.panel import StorePanel
from swarmdeck.app.readonly import WriteGate


def key_commands(
    app: App[None],
    gate: WriteGate,
    elsewhere: Callable[[str], None],
    offered: list[SystemCommand],
) -> Iterable[SystemCommand]:
    """The commands for the keys `offered` (Textual's) does not already name; `elsewhere` is
    what the app says of a panel key pressed where the panel has no selection."""
    titles = {command.title for command in offered}
    actions = {action.action for action in commands.ACTIONS}
    for binding in app.BINDINGS:
        if (isinstance(binding, Binding) and binding.action not in actions
                and binding.description and binding.description not in titles):
            key = binding.key_display or binding.key
            yield SystemCommand(
                f"{binding.description} ({key})",
                f"the {key} key",
                partial(app.run_action, binding.action),
            )
    if gate.readonly:
        return
    for action in commands.ACTIONS:
        yield SystemCommand(
            f"{action.description} ({action.key})",
            f"the {action.key} key",
            getattr(app, f"action_{action.action}"),
        )
    for panel in app.screen_stack[0].query(".panel"):
        for binding in type(panel).BINDINGS:
            if isinstance(binding, Binding) and binding.description:
                yield SystemCommand(
                    f"{binding.description} ({binding.key})",
                    f"the {binding.key} key in the {type(panel).TITLE} panel",
                    partial(panel_key, app, gate, elsewhere, panel, binding),
                )


async def panel_key(
    app: App[None],
    gate: WriteGate,
    elsewhere: Callable[[str], None],
    panel: Widget,
    binding: Binding,
) -> None:
    """A panel's key chosen in the palette does what the key does where the focus is (the
    palette closed): the panel's action on its selection when the focus is in that panel
    (or a detail view's own key), else the same refusal as the key's."""
    if not isinstance(panel, StorePanel):
        await panel.run_action(binding.action)
        return
    active = app.screen.active_bindings.get(binding.key)
    node = active.node if active is not None and active.enabled else None
    if node is None or (isinstance(node, StorePanel) and node is not panel):
        where = panel.elsewhere(binding.key)
        if gate.readonly or where is None:
            panel.writable()
        else:
            app.notify(f"select {where} first", severity="warning")
        return
    if node is app:
        elsewhere(binding.key)
        return
    await node.run_action(active.binding.action)
