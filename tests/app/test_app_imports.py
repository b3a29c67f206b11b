"""The control room and the browser view load the SSH library only where a peer is configured.

asyncssh and the cryptography it brings hold about 17 MB resident and take a tenth of a second
to import: an app on a machine without peers pays neither (bench/results/app.md's soak)."""

from __future__ import annotations

import subprocess
import sys


def test_the_app_and_the_browser_view_load_no_ssh_library_without_a_peer() -> None:
    loaded = subprocess.run(
        [sys.executable, "-c",
         "import sys, swarmdeck.app.main, swarmdeck.serve.shared_snapshot;"
         " print(sorted({m.split('.')[0] for m in sys.modules} & {'asyncssh', 'cryptography'}))"],
        capture_output=True, text=True, timeout=60, check=True,
    ).stdout.strip()
    assert loaded == "[]"
