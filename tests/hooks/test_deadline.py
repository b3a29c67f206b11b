"""The hook's time limit: slow work is cut short instead of outliving Claude Code's timeout."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from claude_lines import hook_payload
from swarmdeck.hooks.deadline import OutOfTime, TimeLimit


def test_work_past_its_budget_is_cut_short() -> None:
    start = time.monotonic()
    with pytest.raises(OutOfTime), TimeLimit(0.2):
        time.sleep(5)
    assert time.monotonic() - start < 2
    with TimeLimit(1.0):
        answer = 42
    assert answer == 42


def test_a_block_that_ends_in_time_leaves_only_the_timer_it_found() -> None:
    """No alarm of its own goes off later; an outer one (the test runner's) keeps counting."""
    outer_left, _interval = signal.getitimer(signal.ITIMER_REAL)
    with TimeLimit(0.2):
        pass
    time.sleep(0.4)
    left, _interval = signal.getitimer(signal.ITIMER_REAL)
    if outer_left:
        assert outer_left - 5 < left < outer_left
    else:
        assert left == 0


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
    with pytest.raises(OutOfTime, match=r"0\.3"), TimeLimit(0.3):
        with TimeLimit(5.0):
            pass
        time.sleep(5)
    assert time.monotonic() - start < 2


def test_an_inner_limit_never_outlives_the_outer_one() -> None:
    start = time.monotonic()
    with pytest.raises(OutOfTime), TimeLimit(0.3), TimeLimit(5.0):
        time.sleep(5)
    assert time.monotonic() - start < 2
