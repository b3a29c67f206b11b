"""A real `swarmdeck serve` for the tests, and a real headless Chromium that opens it.

The browser is Debian's chromium (swarmdeck/serve/headless.py); the tests skip with one line
where it or Playwright is missing. What the browser shows is read from the websocket frames
the served app sends it: the page draws them on a canvas, and the frames are the screen's text
with its escape sequences.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from waiting import wait_for

SWARMDECK = str(Path(sys.executable).parent / "swarmdeck")
ESCAPES = re.compile(
    r"\x1b(\[[0-9;?<>=$]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[()][0-9A-B]|[=>78])"
)
"""A terminal's escape sequences (CSI, OSC, charset and keypad ones): what the text is without."""


def need_chromium() -> None:
    """Skip the module, in one line, where the browser or its driver is missing."""
    from swarmdeck.serve.headless import CHROMIUM

    if not CHROMIUM.exists():
        pytest.skip("no /usr/bin/chromium: apt-get install chromium", allow_module_level=True)
    pytest.importorskip("playwright", reason="no playwright: make installs it with the tests")


@dataclass
class Served:
    """A running `swarmdeck serve`: its process, the URL it printed, and what it printed."""

    process: subprocess.Popen[str]
    url: str
    printed: list[str] = field(default_factory=list)

    @property
    def base(self) -> str:
        """The server's address, without the token."""
        return self.url.split("/?", 1)[0]

    @property
    def token(self) -> str:
        return self.url.rsplit("token=", 1)[1]

    def stop(self) -> str:
        """SIGTERM, then everything it printed after the URL (stdout and stderr)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        out, _ = self.process.communicate(timeout=30)
        return out


@contextlib.contextmanager
def serving(*args: str) -> Iterator[Served]:
    """`swarmdeck serve --port 0 ARGS` until the block ends; the URL once it listens."""
    process = subprocess.Popen(
        [SWARMDECK, "serve", "--port", "0", *args], stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True, start_new_session=True,
    )
    assert process.stdout is not None
    printed = []
    try:
        for line in process.stdout:
            printed.append(line)
            if "open http://" in line:
                break
        else:
            raise AssertionError(f"serve printed no URL: {''.join(printed)!r}")
        url = line.split("open ", 1)[1].strip()
        served = Served(process, url, printed)
        yield served
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


class Screen:
    """What the served app sent one browser page, as text."""

    def __init__(self, page) -> None:
        self.page = page
        self.frames: list[str] = []
        page.on("websocket", self._watch)

    def _watch(self, socket) -> None:
        socket.on("framereceived", self._received)

    def _received(self, payload: bytes | str) -> None:
        text = payload.decode("utf-8", "replace") if isinstance(payload, bytes) else payload
        self.frames.append(text)

    def text(self) -> str:
        return ESCAPES.sub("", "".join(self.frames))

    def since(self, mark: int) -> str:
        return ESCAPES.sub("", "".join(self.frames[mark:]))

    def wait_for_text(self, *words: str, since: int = 0) -> None:
        """Until every word has been drawn (after frame `since`), the page's events flowing."""

        def drawn() -> bool:
            self.page.wait_for_timeout(50)
            shown = self.since(since)
            return all(word in shown for word in words)

        wait_for(drawn, seen=lambda: self.since(since)[-2000:])

    def press(self, *keys: str) -> None:
        """Type keys into the page's terminal."""
        self.page.focus(".xterm-helper-textarea")
        for key in keys:
            self.page.keyboard.press(key)


def browser():
    """A headless Chromium with a fresh profile: a Playwright browser context."""
    from swarmdeck.serve.headless import chromium

    return chromium()


def open_screen(context, url: str) -> Screen:
    """A new page on `url`, its screen watched from the first frame."""
    page = context.new_page()
    screen = Screen(page)
    page.goto(url)
    return screen
