"""A break switch acts only inside a verified selftest; set anywhere else it changes nothing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from swarmdeck import breaks

ASK = "from swarmdeck.breaks import broken; print(broken('no-redact'))"


def _ask(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`broken('no-redact')` as another process sees it, with exactly these variables."""
    whole = {key: value for key, value in os.environ.items() if not key.startswith("SWARMDECK_")}
    return subprocess.run(
        [sys.executable, "-c", ASK], env=whole | env, capture_output=True, text=True, check=True
    )


@pytest.fixture
def marker(tmp_path: Path) -> Path:
    path = tmp_path / "selftest.marker"
    breaks.write_marker(str(path))
    return path


def test_a_switch_inside_a_selftest_is_honoured(marker: Path) -> None:
    asked = _ask({breaks.BREAK_VARIABLE: "no-redact", breaks.MARKER_VARIABLE: str(marker)})
    assert asked.stdout.strip() == "True"
    assert asked.stderr == ""


def test_a_switch_without_a_marker_is_refused_in_one_line() -> None:
    asked = _ask({breaks.BREAK_VARIABLE: "no-redact"})
    assert asked.stdout.strip() == "False"
    assert len(asked.stderr.splitlines()) == 1
    assert "refused" in asked.stderr and "selftest" in asked.stderr


@pytest.mark.parametrize("name", sorted(breaks.SWITCHES))
def test_every_switch_is_refused_outside_a_selftest(name: str) -> None:
    code = f"from swarmdeck.breaks import broken; print(broken({name!r}))"
    whole = {key: value for key, value in os.environ.items() if not key.startswith("SWARMDECK_")}
    asked = subprocess.run(
        [sys.executable, "-c", code],
        env=whole | {breaks.BREAK_VARIABLE: name},
        capture_output=True,
        text=True,
        check=True,
    )
    assert asked.stdout.strip() == "False"
    assert f"{breaks.BREAK_VARIABLE}={name} refused" in asked.stderr


def test_a_marker_of_a_selftest_that_ended_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "selftest.marker"
    code = f"from swarmdeck.breaks import write_marker; write_marker({str(path)!r})"
    subprocess.run([sys.executable, "-c", code], check=True)
    asked = _ask({breaks.BREAK_VARIABLE: "no-redact", breaks.MARKER_VARIABLE: str(path)})
    assert asked.stdout.strip() == "False"
    assert "no longer running" in asked.stderr


def test_a_marker_others_can_write_is_refused(marker: Path) -> None:
    marker.chmod(0o622)
    asked = _ask({breaks.BREAK_VARIABLE: "no-redact", breaks.MARKER_VARIABLE: str(marker)})
    assert asked.stdout.strip() == "False"
    assert "writable by others" in asked.stderr


def test_a_forged_marker_is_refused(tmp_path: Path) -> None:
    forged = tmp_path / "forged.marker"
    forged.write_text('{"pid": 1, "start_ticks": 0}')
    forged.chmod(0o600)
    asked = _ask({breaks.BREAK_VARIABLE: "no-redact", breaks.MARKER_VARIABLE: str(forged)})
    assert asked.stdout.strip() == "False"


def test_a_fifo_at_the_marker_path_never_blocks(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert breaks.marker_problem(str(fifo)) == f"the selftest marker {fifo} is not a regular file"


def test_another_switch_is_not_turned_on_by_the_marker(marker: Path) -> None:
    asked = _ask({breaks.BREAK_VARIABLE: "no-host-key", breaks.MARKER_VARIABLE: str(marker)})
    assert asked.stdout.strip() == "False"


def test_an_unknown_switch_name_is_a_programming_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(breaks.BREAK_VARIABLE, "no-such-switch")
    with pytest.raises(KeyError):
        breaks.broken("no-such-switch")
