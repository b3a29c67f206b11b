"""A copy of swarmdeck's sources of a test's own, with the module bundle `make compile` writes:
tests of the bundle build, change and break the copy's, never the checkout's."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import swarmdeck

PACKAGE = Path(swarmdeck.__file__).parent


def package_copy(tmp_path: Path) -> Path:
    """tmp_path/src, holding the copy and its bundle."""
    shutil.copytree(PACKAGE, tmp_path / "src" / "swarmdeck",
                    ignore=shutil.ignore_patterns("__pycache__"))
    built = with_copy(tmp_path, "-m", "swarmdeck.module_bundle")
    assert built.returncode == 0, built.stderr
    return tmp_path / "src"


def with_copy(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """This interpreter, with the copy first on its path, run with these arguments."""
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "src"), "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env,
                          timeout=60)
