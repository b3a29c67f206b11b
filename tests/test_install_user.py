"""`make install-user`, the README's one step that puts `swarmdeck` on the user's PATH: a link
in ~/.local/bin to this checkout's console script, made again harmlessly, never over a file of
the user's, and a line saying so when that folder is not on PATH."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _make(home: Path, path: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(home), "PATH": path}
    return subprocess.run(["make", "-s", "-C", str(ROOT), "install-user"], env=env,
                          capture_output=True, text=True, timeout=300, check=False)


def test_install_user_links_swarmdeck_into_local_bin_and_again(tmp_path: Path) -> None:
    link = tmp_path / ".local" / "bin" / "swarmdeck"
    first = _make(tmp_path, os.environ["PATH"])
    assert first.returncode == 0, first.stderr
    assert link.is_symlink() and link.resolve() == (ROOT / ".venv" / "bin" / "swarmdeck").resolve()
    assert "not on your PATH" in first.stdout and str(tmp_path / ".local" / "bin") in first.stdout
    again = _make(tmp_path, f"{tmp_path}/.local/bin:{os.environ['PATH']}")
    assert again.returncode == 0, again.stderr
    assert "not on your PATH" not in again.stdout
    done = subprocess.run(["swarmdeck", "--version"], capture_output=True, text=True,
                          env={**os.environ, "PATH": f"{link.parent}:/usr/bin:/bin"}, timeout=60)
    assert done.returncode == 0 and done.stdout.startswith("swarmdeck ")


def test_install_user_leaves_a_file_of_the_users_alone(tmp_path: Path) -> None:
    mine = tmp_path / ".local" / "bin" / "swarmdeck"
    mine.parent.mkdir(parents=True)
    mine.write_text("#!/bin/sh\necho mine\n")
    refused = _make(tmp_path, os.environ["PATH"])
    assert refused.returncode != 0
    assert str(mine) in refused.stderr and "move it aside" in refused.stderr
    assert mine.read_text() == "#!/bin/sh\necho mine\n"
