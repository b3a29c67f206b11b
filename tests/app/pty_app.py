"""A tiny Textual app that notes every input event it gets in a file, one line each, run on a
pseudo-terminal by test_driver.py and test_terminal_gone.py: `pty_app.py NOTES [quiet|textual]`
picks the driver; it exits with the app's return code.

Lines: `thread TID` (the input thread, at start and after each resume), `key KEY`,
`paste TEXT`, `mouse X Y`, `size COLUMNSxROWS`, `suspended`, `resumed`."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

from textual import events
from textual.app import App, ComposeResult
from textual.drivers.linux_driver import LinuxDriver
from textual.widgets import Static

from swarmdeck.app.driver import QuietInputDriver

DRIVERS = {"quiet": QuietInputDriver, "textual": LinuxDriver}


class NotingApp(App[int]):
    BINDINGS = [("q", "quit"), ("s", "pause")]

    def __init__(self, notes: Path, driver: str) -> None:
        super().__init__(driver_class=DRIVERS[driver])
        self.notes = notes

    def compose(self) -> ComposeResult:
        yield Static("ready")

    def note(self, line: str) -> None:
        with self.notes.open("a") as out:
            out.write(line + "\n")

    def note_input_thread(self) -> None:
        found = [t for t in threading.enumerate() if t.name == "textual-input"]
        self.note(f"thread {found[0].native_id if found else 'none'}")

    def on_mount(self) -> None:
        self.note_input_thread()

    def on_key(self, event: events.Key) -> None:
        self.note(f"key {event.key}")

    def on_paste(self, event: events.Paste) -> None:
        self.note(f"paste {event.text}")

    def on_mouse_down(self, event: events.MouseDown) -> None:
        self.note(f"mouse {event.screen_x} {event.screen_y}")

    def on_resize(self, event: events.Resize) -> None:
        self.note(f"size {event.size.width}x{event.size.height}")

    def action_pause(self) -> None:
        with self.suspend():
            self.note("suspended")
        self.note("resumed")
        self.note_input_thread()


if __name__ == "__main__":
    app = NotingApp(Path(sys.argv[1]), sys.argv[2] if len(sys.argv) > 2 else "quiet")
    app.run()
    sys.exit(app.return_code or 0)
