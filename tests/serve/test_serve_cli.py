"""`swarmdeck serve` where textual-serve is not installed: one line saying what to install."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from served import SWARMDECK


def test_without_textual_serve_serve_says_what_to_install(tmp_path: Path) -> None:
    # A textual_serve that cannot be imported, ahead of the installed one.
    (tmp_path / "textual_serve").mkdir()
    (tmp_path / "textual_serve" / "__init__.py").write_text("raise ImportError('absent')\n")
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    done = subprocess.run([SWARMDECK, "serve", "--port", "0"], capture_output=True, text=True,
                          env=env, timeout=60)
    assert done.returncode == 251 and done.stdout == ""
    assert done.stderr == (
        "swarmdeck: swarmdeck serve needs textual-serve: pip install 'swarmdeck[serve]'\n"
    ), done.stderr
