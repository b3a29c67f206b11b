"""Break switches: each turns one decision off, and only inside a `swarmdeck selftest` run.

A guard that is always green proves nothing. The selftest proves that each of its cells can go
red by running it again with the decision that keeps it green switched off
(`SWARMDECK_BREAK=NAME[,NAME…]`). A switch is honoured only while the selftest's marker holds:
a file the selftest wrote, owned by this user and writable by no one else, naming a live
process by pid and start ticks. Set anywhere else it is refused with one line on stderr and
changes nothing, so it can never weaken a real run.

Nothing is imported unless the variable is set: guards on the hook path call `broken`.
"""

from __future__ import annotations

import os
import sys

BREAK_VARIABLE = "SWARMDECK_BREAK"
MARKER_VARIABLE = "SWARMDECK_SELFTEST_MARKER"

SWITCHES: dict[str, str] = {
    "no-cage-fallback": "a cage that cannot be made runs the job uncapped instead of exiting 251",
    "no-peer-switch": "a disabled peer runs the job here instead of exiting 78",
    "no-redact": "a peer's output is shown without redacting secrets",
    "no-host-key": "a peer's changed host key is accepted",
    "no-admission-lock": "admission checks the room outside its write transaction",
    "no-pid-start-check": "a pid is trusted without comparing its start ticks",
    "no-supervised-check": "a kill is approved for a process swarmdeck does not supervise",
    "no-lock-takeover-check": "a lock is taken over without checking that its holder is gone",
    "no-oom-verdict": "a job the OOM killer ended reports the kernel's kill, not 250 or 254",
    "no-never-fits": "a booking larger than the whole slice queues instead of exiting 252",
    "guard-heavy-outside-cage": "heavy work outside the cage is let through",
    "guard-heavy-by-subagent": "a subagent's heavy work is let through",
    "guard-timer": "a sleep used as a timer, crontab and CronCreate are let through",
    "guard-wait-loop": "a wait loop without timeout, and background in background, go through",
    "guard-run-scope": "heavy work without its scope declaration is let through",
    "guard-subagent-limit": "a dispatch over the running-subagent limit is let through",
    "guard-dispatch-lines": "a prompt without the required lines is dispatched",
    "guard-dispatch-types": "a forbidden subagent type is dispatched",
    "guard-thread-cap": "a prompt with a wrong or missing thread cap is dispatched",
    "guard-placeholders": "a prompt with unfilled placeholders is dispatched",
    "guard-scratch-lock": "a scratch folder another subagent holds is given out again",
    "guard-write-scope": "a write outside the agent type's globs is let through",
    "guard-continuation": "a message to a subagent that handed back is let through",
    "guard-handback": "a handback with scratch folders left is let through",
}
"""Every switch by name, with the decision it turns off: the one list the selftest's table,
its `--breaks` run and the refusal below read."""

_refused: set[str] = set()


def broken(name: str) -> bool:
    """True when the switch `name` is set and this process runs inside a verified selftest."""
    wanted = os.environ.get(BREAK_VARIABLE)
    if not wanted:
        return False
    if name not in SWITCHES:
        raise KeyError(f"no break switch named {name!r}")
    if name not in {part.strip() for part in wanted.split(",")}:
        return False
    problem = marker_problem(os.environ.get(MARKER_VARIABLE))
    if problem is None:
        return True
    if name not in _refused:
        _refused.add(name)
        print(
            f"swarmdeck: {BREAK_VARIABLE}={name} refused ({problem}); break switches act only "
            "inside `swarmdeck selftest --breaks`",
            file=sys.stderr,
        )
    return False


def marker_problem(path: str | None) -> str | None:
    """Why the selftest marker at `path` does not hold, or None when it does."""
    import json
    import stat

    if not path:
        return f"{MARKER_VARIABLE} is not set"
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as error:
        return f"no selftest marker at {path} ({error.strerror})"
    try:
        facts = os.fstat(fd)
        if not stat.S_ISREG(facts.st_mode):
            return f"the selftest marker {path} is not a regular file"
        if facts.st_uid != os.getuid():
            return f"the selftest marker {path} belongs to another user"
        if facts.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            return f"the selftest marker {path} is writable by others"
        text = os.read(fd, 4096)
    finally:
        os.close(fd)
    try:
        marker = json.loads(text)
        pid, ticks = int(marker["pid"]), int(marker["start_ticks"])
    except (ValueError, KeyError, TypeError):
        return f"the selftest marker {path} is not one"
    from swarmdeck.probes.procs import start_ticks

    if start_ticks(pid) != ticks:
        return f"the selftest that wrote {path} is no longer running"
    return None


def write_marker(path: str) -> None:
    """Mark this process as a running selftest (mode 0600, replaced if present)."""
    import json

    from swarmdeck.probes.procs import own_identity

    me = own_identity()
    text = json.dumps({"pid": me.pid, "start_ticks": me.start_ticks}).encode()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, text)
    finally:
        os.close(fd)
