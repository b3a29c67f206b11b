"""The yardstick for the control room's memory: a minimal Textual app with one DataTable of a
few rows, refreshed every 2 s as the control room refreshes (bench/bench_app.py runs it in a
pane beside the others and reads its resident memory)."""

from __future__ import annotations

import time

from textual.app import App, ComposeResult
from textual.widgets import DataTable

ROWS = 20


class MinimalTable(App[None]):
    def compose(self) -> ComposeResult:
        yield DataTable()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        for name in ("label", "state", "booked", "peak", "cap", "runtime"):
            table.add_column(name, key=name)
        for n in range(ROWS):
            table.add_row(f"job {n}", "running", "1G", "512M", "2G", "0s", key=str(n))
        self.set_interval(2.0, self.tick)

    def tick(self) -> None:
        table = self.query_one(DataTable)
        now = f"{int(time.monotonic()) % 3600}s"
        for n in range(ROWS):
            table.update_cell(str(n), "runtime", now)


if __name__ == "__main__":
    MinimalTable().run()
