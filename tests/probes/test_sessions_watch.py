"""The watcher wakes the sessions probe on a write instead of waiting for a rescan."""

from __future__ import annotations

import queue
import threading
import time
from pathlib import Path

from claude_lines import ClaudeTree, Lines, append
from swarmdeck.probes.claude.sessions import SessionsProbe
from swarmdeck.probes.claude.sessions_watch import watch_sessions

SID = "ffff6666-0000-4000-8000-000000000014"


def test_an_appended_line_is_seen_without_waiting_for_a_rescan(tmp_path: Path) -> None:
    tree = ClaudeTree(tmp_path / "claude")
    main = Lines(SID)
    main.prompt("go", 0)
    main.agent("toolu_w", "watched", "Watched work.", 1)
    path = tree.write_main(main)
    stop = threading.Event()
    seen: queue.Queue[list] = queue.Queue()

    def consume() -> None:
        for sessions in watch_sessions(SessionsProbe(tmp_path / "claude"), stop,
                                       rescan_every=60.0, debounce_ms=50):
            seen.put(sessions)

    worker = threading.Thread(target=consume, daemon=True)
    worker.start()
    try:
        first = seen.get(timeout=10)
        assert first[0].subagents[0].status == "running"
        time.sleep(0.3)
        done = Lines(SID)
        done.foreground_done("toolu_w", "aw", 20)
        append(path, done.dumps())
        deadline = time.monotonic() + 10
        status = "running"
        while status == "running" and time.monotonic() < deadline:
            status = seen.get(timeout=10)[0].subagents[0].status
        assert status == "completed"
    finally:
        stop.set()
        worker.join(timeout=10)
    assert not worker.is_alive()


def test_a_write_before_the_watch_is_in_place_is_seen_soon(tmp_path: Path) -> None:
    """The first reading is taken before the watch starts: a line appended in between must
    not wait for the next rescan."""
    tree = ClaudeTree(tmp_path / "claude")
    main = Lines(SID)
    main.prompt("go", 0)
    main.agent("toolu_w", "watched", "Watched work.", 1)
    path = tree.write_main(main)
    stop = threading.Event()
    appended = threading.Event()
    seen: queue.Queue[list] = queue.Queue()

    def consume() -> None:
        for sessions in watch_sessions(SessionsProbe(tmp_path / "claude"), stop,
                                       rescan_every=600.0, debounce_ms=50):
            seen.put(sessions)
            appended.wait(10)

    worker = threading.Thread(target=consume, daemon=True)
    worker.start()
    try:
        assert seen.get(timeout=10)[0].subagents[0].status == "running"
        done = Lines(SID)
        done.foreground_done("toolu_w", "aw", 20)
        append(path, done.dumps())
        appended.set()
        assert seen.get(timeout=20)[0].subagents[0].status == "completed"
    finally:
        stop.set()
        worker.join(timeout=10)
    assert not worker.is_alive()
