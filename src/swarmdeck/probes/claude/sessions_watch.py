"""Wakes the sessions probe when Claude Code writes a transcript, instead of rescanning on a timer.

`watch_sessions` yields the sessions once, then again after each batch of writes under
`projects/` or `sessions/`, refreshing only the paths that changed. A quiet spell still yields a
full refresh every `rescan_every` seconds (a session can end without writing: its process dies),
and without the folders to watch, or when the OS refuses a watch, it falls back to polling.
A write that lands between the first read and the moment the watch is in place is caught by
one full refresh about a second after the watch starts.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

from swarmdeck.probes.claude.sessions import SessionInfo, SessionsProbe

RESCAN_EVERY = 15.0
DEBOUNCE_MS = 200
SETTLE = 1.0
"""Seconds after the watch starts when one full refresh catches what it could not see."""


def watched_roots(claude_dir: Path) -> list[Path]:
    return [path for path in (claude_dir / "projects", claude_dir / "sessions") if path.is_dir()]


def _transcript_or_pid_file(_change: object, path: str) -> bool:
    return path.endswith((".jsonl", ".json"))


def watch_sessions(
    probe: SessionsProbe,
    stop: threading.Event,
    *,
    rescan_every: float = RESCAN_EVERY,
    debounce_ms: int = DEBOUNCE_MS,
) -> Iterator[list[SessionInfo]]:
    """Sessions now, then after every change, until `stop` is set.

    While it runs, the probe is marked watched: snapshots then take its sessions as they are
    instead of rescanning every file.
    """
    yield probe.refresh()
    probe.watched = True
    try:
        while not stop.is_set():
            roots = watched_roots(probe.claude_dir)
            if not roots:
                if stop.wait(rescan_every):
                    return
                yield probe.refresh()
                continue
            yield from _watch(probe, stop, roots, rescan_every, debounce_ms)
    finally:
        probe.watched = False


def _watch(
    probe: SessionsProbe,
    stop: threading.Event,
    roots: list[Path],
    rescan_every: float,
    debounce_ms: int,
) -> Iterator[list[SessionInfo]]:
    import watchfiles

    settle = min(SETTLE, rescan_every)
    rescanned_at: float | None = None
    try:
        for changes in watchfiles.watch(
            *roots,
            watch_filter=_transcript_or_pid_file,
            stop_event=stop,
            debounce=debounce_ms,
            rust_timeout=int(settle * 1000),
            yield_on_timeout=True,
            raise_interrupt=False,
        ):
            if stop.is_set():
                return
            if not changes:
                now = time.monotonic()
                if rescanned_at is not None and now - rescanned_at < rescan_every:
                    continue
                rescanned_at = now
                yield probe.refresh()
                if watched_roots(probe.claude_dir) != roots:
                    return
                continue
            yield probe.refresh(path for _change, path in changes)
    except (OSError, RuntimeError):
        # No watch to be had (inotify limits, a folder removed under us): poll instead.
        if not stop.wait(rescan_every):
            yield probe.refresh()
