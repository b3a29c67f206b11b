"""The migrate pane (`m` on a queued job's row): each peer's fit for the job now, the exact
command, the toolchain differences. Cancel is focused, so `enter` alone does nothing; the
Migrate button launches it on the chosen peer detached and the Jobs panel follows it. The job
is withdrawn here once it started there, so it never runs twice."""

from __future__ import annotations

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Label, OptionList, Static
from textual.widgets.option_list import Option

from swarmdeck.actions.migration import (
    Launched,
    MigrationOption,
    MigrationRefused,
    launch,
    migration_options,
    toolchain_differences,
    withdraw_queued,
)
from swarmdeck.config import Config
from swarmdeck.ledger.schema import QUEUED
from swarmdeck.printable import printable
from swarmdeck.probes.memory_book import LedgerJob


def pane_title(job_id: int, label: str) -> Text:
    """The pane's title: the job, and its label (an agent's words) as text, never as markup."""
    return Text.assemble((f"Migrate job {job_id}", "bold"), f" ({printable(label)})")


class MigrateScreen(ModalScreen[str | None]):
    """A modal over the room; dismissed with the launch's last line, or None when closed."""

    DEFAULT_CSS = """
    MigrateScreen {
        align: center middle;
    }
    #migrate-box {
        width: 100;
        max-width: 100%;
        height: auto;
        max-height: 90%;
        border: thick $accent;
        background: $surface;
        padding: 1 2;
    }
    #migrate-peers {
        height: auto;
        max-height: 10;
    }
    #migrate-buttons {
        height: auto;
        align-horizontal: right;
    }
    #migrate-buttons Button {
        margin-left: 2;
    }
    """

    BINDINGS = [Binding("escape", "close", "Close")]

    def __init__(self, config: Config, job: LedgerJob) -> None:
        """Args:
            config: The effective configuration (its [[hosts]] are the peers offered).
            job: The ledger job to move.
        """
        super().__init__(id="migrate")
        self.config = config
        self.job = job
        self.options = migration_options(config, job)
        self.differences: dict[str, list[str]] = {}

    def compose(self) -> ComposeResult:
        with Vertical(id="migrate-box"):
            yield Label(pane_title(self.job.id, self.job.label))
            yield OptionList(
                *(
                    Option(Text(printable(option.summary())), id=option.host)
                    for option in self.options
                ),
                id="migrate-peers",
            )
            yield Static("", id="migrate-command", markup=False)
            yield Static("", id="migrate-toolchains", markup=False)
            yield Label("[dim]Tab to the peers to choose one · Escape closes[/dim]")
            with Horizontal(id="migrate-buttons"):
                yield Button("Cancel", id="cancel", variant="primary")
                yield Button("Migrate", id="migrate-do", variant="warning", disabled=True)

    def on_mount(self) -> None:
        self.query_one("#cancel", Button).focus()
        if self.options:
            self.query_one(OptionList).highlighted = 0
            self._show(self.options[0])
        for option in self.options:
            self.compare(option.host)

    def _selected(self) -> MigrationOption | None:
        index = self.query_one(OptionList).highlighted
        return self.options[index] if index is not None and index < len(self.options) else None

    def _show(self, option: MigrationOption) -> None:
        button = self.query_one("#migrate-do", Button)
        button.label = f"Migrate to {option.host}"
        button.disabled = not option.fits
        self.query_one("#migrate-command", Static).update(f"command: {option.command}")
        differences = self.differences.get(option.host)
        if differences is None:
            text = "toolchains: comparing…"
        elif differences:
            text = "toolchains differ:\n  " + "\n  ".join(differences)
        else:
            text = "toolchains: the same"
        self.query_one("#migrate-toolchains", Static).update(text)

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        option = self._selected()
        if option is not None:
            self._show(option)

    @work(thread=True, group="migrate-toolchains")
    def compare(self, host: str) -> None:
        """Compare one peer's toolchains off the UI loop; it talks to the peer."""
        found = toolchain_differences(self.config, host)
        self.app.call_from_thread(self._compared, host, found)

    def _compared(self, host: str, found: list[str]) -> None:
        self.differences[host] = found
        option = self._selected()
        if option is not None and option.host == host:
            self._show(option)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        """Choosing a peer moves to its Migrate button; it does not launch."""
        option = self._selected()
        if option is None:
            return
        if not option.fits:
            self.notify(f"{option.host} does not fit it now: {option.reason}", severity="warning")
            return
        self.query_one("#migrate-do", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        option = self._selected()
        if event.button.id != "migrate-do" or option is None or not option.fits:
            self.dismiss(None)
            return
        event.button.disabled = True
        self.query_one("#migrate-command", Static).update(f"launching: {option.command}")
        self.start(option)

    @work(thread=True, exclusive=True, group="migrate-launch")
    def start(self, option: MigrationOption) -> None:
        """Launch detached off the UI loop: it copies the tree before it returns."""
        try:
            launched = launch(option, self.app.store)
        except MigrationRefused as error:
            launched = Launched(int(error.exit_code), error.message)
        self.app.call_from_thread(self._launched, option, launched)

    def _launched(self, option: MigrationOption, launched: Launched) -> None:
        code, line = launched.code, launched.line
        if code == 0:
            if self.job.state == QUEUED:
                moved = withdraw_queued(self.app.store, self.job.id, option.host, launched.job_id)
                line = f"{line}; {moved}"
            self.dismiss(line)
        else:
            self.notify(f"{option.host}: {line} (exit {code})", severity="error", timeout=10)
            self._show(option)

    def action_close(self) -> None:
        self.dismiss(None)
