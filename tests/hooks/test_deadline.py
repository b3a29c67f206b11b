"""The hook's time limit: slow work is cut short instead of outliving Claude Code's timeout."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from claude_lines import hook_payload
from swarmdeck.hooks.deadline import OutOfTime, within


def test_work_past_its_budget_is_cut_short() -> None:
    start = time.monotonic()
    with pytest.raises(OutOfTime):
        within(0.2, lambda: time.sleep(5))
    assert time.monotonic() - start < 2
    assert within(1.0, lambda: 42) == 42


def test_a_hung_git_does_not_hold_session_start(run_hook, tmp_path: Path, monkeypatch) -> None:
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    git = fake_bin / "git"
    git.write_text("#!/bin/sh\nsleep 30\n")
    git.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake_bin}{os.pathsep}{os.environ['PATH']}")
    start = time.monotonic()
    done = run_hook("session-start", hook_payload("SessionStart", source="compact",
                                                  cwd=str(tmp_path)))
    assert time.monotonic() - start < 10
    assert done.returncode == 0
    assert "Uncommitted changes" in done.context and "not read" in done.context


def test_an_inner_limit_keeps_the_outer_one() -> None:
    start = time.monotonic()
    with pytest.raises(OutOfTime, match=r"0\.3"):
        within(0.3, lambda: (within(5.0, lambda: 1), time.sleep(5)))
    assert time.monotonic() - start < 2


def test_an_inner_limit_never_outlives_the_outer_one() -> None:
    start = time.monotonic()
    with pytest.raises(OutOfTime):
        within(0.3, lambda: within(5.0, lambda: time.sleep(5)))
    assert time.monotonic() - start < 2
