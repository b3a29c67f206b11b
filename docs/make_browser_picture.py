"""Take the README's browser picture: `swarmdeck serve` on the demo scene, in headless Chromium.

Run by `make browser-picture` (and `make pictures`). The scene is the one `swarmdeck demo`
shows and the page is opened as a person opens it, from the URL serve prints; the picture is
Chromium's own screenshot of textual-serve's page, saved as docs/pictures/browser.png. The scene
is removed once the picture is taken.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

from swarmdeck.demo.scene import Scene, SceneSettings
from swarmdeck.serve.headless import chromium

OUT = Path(__file__).resolve().parent / "pictures" / "browser.png"
SWARMDECK = str(Path(sys.executable).parent / "swarmdeck")
SHOWN = ("queued", "own cap", "Agents", "Alerts")
"""What the page has drawn once the scene shows its parts."""


def _url(process: subprocess.Popen[str]) -> str:
    assert process.stdout is not None
    for line in process.stdout:
        if "open http://" in line:
            return line.split("open ", 1)[1].strip()
    raise SystemExit("swarmdeck serve printed no URL")


def take(url: str) -> None:
    """Open `url`, wait until the scene is drawn, and save the page's screenshot."""
    drawn: list[str] = []
    with chromium() as context:
        page = context.new_page()
        page.on("websocket", lambda socket: socket.on(
            "framereceived",
            lambda payload: drawn.append(
                payload.decode("utf-8", "replace") if isinstance(payload, bytes) else payload
            ),
        ))
        page.goto(url)
        deadline = time.monotonic() + 90
        while not all(word in "".join(drawn) for word in SHOWN):
            if time.monotonic() > deadline:
                raise SystemExit("the served page never drew the scene")
            page.wait_for_timeout(250)
        page.wait_for_timeout(1500)
        OUT.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(OUT))


def main() -> int:
    scene = Scene(SceneSettings(step=0.5), say=lambda line: print(line, file=sys.stderr))
    try:
        scene.start()
        # The scene's environment (state, config, Claude Code folder) is this process's now.
        server = subprocess.Popen([SWARMDECK, "serve", "--port", "0"], stdout=subprocess.PIPE,
                                  text=True)
        try:
            take(_url(server))
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=30)
    finally:
        scene.stop()
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
