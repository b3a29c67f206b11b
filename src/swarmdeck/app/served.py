"""One browser's control room: the app on textual-serve's web driver, fed by the server's probe.

`swarmdeck serve` has textual-serve start `python -m swarmdeck.app.served FOLDER [--readonly]`
for each browser that connects; its environment (the state folder, the config) is the server's.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from textual.drivers.web_driver import WebDriver

from swarmdeck.app.main import SwarmdeckApp
from swarmdeck.config_cache import cached_config
from swarmdeck.serve.shared_snapshot import SnapshotReader
from swarmdeck.state import StateStore


def main() -> int:
    """Run the control room for one browser until it goes; returns the app's exit status."""
    parser = argparse.ArgumentParser(prog="python -m swarmdeck.app.served")
    parser.add_argument("folder", type=Path, help="the server's shared snapshot folder")
    parser.add_argument("--readonly", action="store_true", help="every action refuses")
    args = parser.parse_args()
    config, store = cached_config(), StateStore.open_default()
    reader = SnapshotReader(args.folder, wait=max(0.25, config.ui.refresh_interval))
    app = SwarmdeckApp(config, store, prober=reader, readonly=args.readonly)
    # The app picks its terminal driver; a served one talks to textual-serve over its pipes.
    app.driver_class = WebDriver
    try:
        result = app.run()
    finally:
        store.close()
    return result or app.return_code or 0


if __name__ == "__main__":
    raise SystemExit(main())
