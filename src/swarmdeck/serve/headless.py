"""A served page in a headless Chromium, for swarmdeck's own checks: the browser tests, the
viewer benchmark and the README's browser picture.

It drives Debian's chromium (/usr/bin/chromium) through Playwright's Python API with that very
executable: no browser is downloaded. The flags keep it off a closed network's addresses (no
background fetches, updates or sync) and the profile is a fresh folder, removed afterwards.
`swarmdeck serve` itself never imports this module.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from playwright.sync_api import BrowserContext

CHROMIUM = Path("/usr/bin/chromium")
"""Debian's chromium."""
FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
)
"""Chromium on a closed network, as root: nothing it would fetch or update by itself."""
VIEWPORT = {"width": 1400, "height": 900}
"""The page's size in pixels: 155×50 cells of textual-serve's 16 px font."""


@contextlib.contextmanager
def chromium() -> Iterator[BrowserContext]:
    """A headless Chromium on a fresh profile, as a Playwright browser context."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright, tempfile.TemporaryDirectory() as profile:
        context = playwright.chromium.launch_persistent_context(
            profile, executable_path=str(CHROMIUM), headless=True, args=list(FLAGS),
            viewport=VIEWPORT,
        )
        try:
            yield context
        finally:
            context.close()
