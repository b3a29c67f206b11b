"""The serve token: made at start into a 0600 file, or read from a fixed --token-file that
others may not read; matched in full, never by a prefix."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

from served import SWARMDECK, serving

from swarmdeck.serve.access import TOKEN_FILE_NAME, new_token, serving_token, token_matches


def test_a_token_matches_only_itself() -> None:
    token = new_token()
    assert token_matches(token, token)
    for other in ("", token[:-1], token + "x", token.upper(), None, "é" * 43):
        assert not token_matches(other, token), other


def test_each_start_makes_a_new_token_in_a_0600_file(tmp_path: Path) -> None:
    first, path = serving_token(None, tmp_path)
    second, again = serving_token(None, tmp_path)
    assert path == again == tmp_path / TOKEN_FILE_NAME and first != second
    assert path.read_text().strip() == second
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_token_file_is_made_once_then_kept(tmp_path: Path) -> None:
    fixed = tmp_path / "fixed"
    made, _ = serving_token(fixed, tmp_path)
    kept, path = serving_token(fixed, tmp_path)
    assert made == kept and path == fixed and stat.S_IMODE(fixed.stat().st_mode) == 0o600
    assert not (tmp_path / TOKEN_FILE_NAME).exists()


def _serve_fails(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([SWARMDECK, "serve", "--port", "0", *args], capture_output=True,
                          text=True, timeout=60)


def test_a_token_file_others_may_read_is_refused_in_one_line(tmp_path: Path) -> None:
    fixed = tmp_path / "fixed"
    fixed.write_text("a-fixed-token-long-enough\n")
    os.chmod(fixed, 0o644)
    done = _serve_fails("--token-file", str(fixed))
    assert done.returncode == 251 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and f"chmod 600 {fixed}" in done.stderr, done.stderr


def test_a_short_or_unprintable_fixed_token_is_refused(tmp_path: Path) -> None:
    for text in ("short\n", "a token with spaces in it\n"):
        fixed = tmp_path / "fixed"
        fixed.write_text(text)
        os.chmod(fixed, 0o600)
        done = _serve_fails("--token-file", str(fixed))
        assert done.returncode == 251 and "must hold one token" in done.stderr, done.stderr


def test_a_fixed_token_is_the_one_served(tmp_path: Path) -> None:
    fixed = tmp_path / "fixed"
    fixed.write_text("a-fixed-token-long-enough\n")
    os.chmod(fixed, 0o600)
    with serving("--token-file", str(fixed)) as served:
        assert served.token == "a-fixed-token-long-enough"


def test_a_port_in_use_is_one_line(tmp_path: Path) -> None:
    with serving() as served:
        port = served.base.rsplit(":", 1)[1]
        done = subprocess.run([SWARMDECK, "serve", "--port", port], capture_output=True,
                              text=True, timeout=60)
    assert done.returncode == 251 and f"port {port}" in done.stderr, done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
