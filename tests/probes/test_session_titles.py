"""A session's title outlives its process: the last one its pid file gave is kept in
swarmdeck's state and shown once the process and its pid file are gone (Claude Code 2.1.328
writes no title record into the transcript)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from claude_lines import ClaudeTree, Lines
from one_command import swarmdeck
from swarmdeck.probes.claude.session_titles import kept_titles
from swarmdeck.probes.claude.sessions import SessionsProbe, sessions_with_hooks
from swarmdeck.probes.procs import start_ticks
from swarmdeck.state import StateStore

SID = "5151aaaa-0000-4000-8000-000000000035"


@pytest.fixture
def claude_process() -> Iterator[subprocess.Popen[bytes]]:
    """A process of the test's own that its pid file names (it stands for Claude Code)."""
    child = subprocess.Popen(["sleep", "300"])
    try:
        yield child
    finally:
        child.kill()
        child.wait()


def _session_with_pid_file(
    isolated_home: Path, process: subprocess.Popen[bytes], name: str
) -> tuple[ClaudeTree, Path]:
    tree = ClaudeTree(isolated_home / "claude")
    main = Lines(SID)
    main.prompt("fix the cage", 0)
    tree.write_main(main)
    pid_file = tree.write_pid_file(process.pid, SID, procStart=str(start_ticks(process.pid)),
                                   name=name, nameSource="derived")
    return tree, pid_file


def _sessions() -> list[dict]:
    done = swarmdeck("status", "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["sessions"]


def test_status_shows_an_ended_sessions_title_from_its_last_pid_file(
    isolated_home: Path, claude_process: subprocess.Popen[bytes]
) -> None:
    _tree, pid_file = _session_with_pid_file(isolated_home, claude_process, "project-41")
    assert [(s["live"], s["title"]) for s in _sessions()] == [(True, "project-41")]
    claude_process.kill()
    claude_process.wait()
    pid_file.unlink()
    # Another `status`, another process: only swarmdeck's state remembers the title.
    assert [(s["live"], s["title"]) for s in _sessions()] == [(False, "project-41")]


def test_the_title_kept_is_the_last_one_the_pid_file_gave(
    isolated_home: Path, claude_process: subprocess.Popen[bytes]
) -> None:
    tree, pid_file = _session_with_pid_file(isolated_home, claude_process, "project-41")
    _sessions()
    tree.write_pid_file(claude_process.pid, SID, procStart=str(start_ticks(claude_process.pid)),
                        name="fix the cage's cap", nameSource="user")
    _sessions()
    claude_process.kill()
    claude_process.wait()
    pid_file.unlink()
    assert kept_titles(StateStore.open_default(), [SID]) == {SID: "fix the cage's cap"}
    [session] = sessions_with_hooks(SessionsProbe(), StateStore.open_default())
    assert (session.live, session.title) == (False, "fix the cage's cap")


def test_a_title_record_in_the_transcript_wins_over_a_kept_one(
    isolated_home: Path, claude_process: subprocess.Popen[bytes]
) -> None:
    tree, pid_file = _session_with_pid_file(isolated_home, claude_process, "project-41")
    _sessions()
    claude_process.kill()
    claude_process.wait()
    pid_file.unlink()
    main = Lines(SID)
    main.prompt("fix the cage", 0)
    main.raw({"type": "custom-title", "customTitle": "Cage work", "sessionId": SID})
    tree.write_main(main)
    [session] = sessions_with_hooks(SessionsProbe(), StateStore.open_default())
    assert session.title == "Cage work"


def test_a_read_only_probe_writes_no_title(
    isolated_home: Path, claude_process: subprocess.Popen[bytes]
) -> None:
    """`swarmdeck probe --json` (what a peer runs) only reads: nothing is kept by it."""
    _session_with_pid_file(isolated_home, claude_process, "project-41")
    done = swarmdeck("probe", "--json")
    assert done.returncode == 0, done.stderr
    assert kept_titles(StateStore.open_default(), [SID]) == {}
