"""The selftest's cells: each proves one guard with real `swarmdeck` processes in its own place.

A cell returns its one-line reason when the guard held, raises CellFailed when it did not and
CellSkipped when it cannot run here. `reddened_by` names the break switches that must turn it
red: the one table `--breaks` reads (every switch in breaks.SWITCHES names at least one cell).
Each cell waits on files its own processes write, never on a fixed pause.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from swarmdeck.probes.machine import local_host_name
from swarmdeck.probes.procs import read_stat, start_ticks
from swarmdeck.selftest.sandbox import (
    PEER_NAME,
    CellFailed,
    CellSkipped,
    Place,
    swarmdeck_argv,
)

DEADLINE = 60.0
"""Seconds any awaited condition may take on a loaded machine before the cell fails."""

HOG = (
    "import os,sys,time\n"
    "mib,hold,after,started=float(sys.argv[1]),float(sys.argv[2]),sys.argv[3],sys.argv[4]\n"
    "started and open(started,'w').close()\n"
    "end=time.monotonic()+60\n"
    "while after and not os.path.exists(after) and time.monotonic()<end:\n"
    "    time.sleep(0.02)\n"
    "n=int(mib*1048576)\n"
    "b=bytearray(n)\n"
    "b[::4096]=b'\\1'*len(range(0,n,4096))\n"
    "print('held',flush=True)\n"
    "time.sleep(hold)\n"
)
"""Touches argv[4] (when named), waits for argv[3] (when named; at most 60 s), allocates
argv[1] MiB touching every page, says "held", holds it argv[2] seconds."""


def hog(mib: float, hold: float = 0.0, after: Path | None = None,
        started: Path | None = None) -> list[str]:
    """A process that really holds `mib` MiB; see HOG."""
    return [sys.executable, "-S", "-c", HOG, str(mib), str(hold), str(after or ""),
            str(started or "")]


def until_file(path: Path) -> str:
    """A shell loop waiting (at most DEADLINE seconds) for `path` to exist."""
    rounds = int(DEADLINE / 0.05)
    return f'i=0; while [ ! -e "{path}" ] && [ $i -lt {rounds} ]; do sleep 0.05; i=$((i+1)); done'


def wait_until(
    place: Place, test: Callable[[], bool], what: str, deadline: float = DEADLINE
) -> None:
    """Poll `test` until true; CellFailed naming `what` past the deadline or once the selftest
    is ending."""
    end = time.monotonic() + deadline
    while not test():
        if time.monotonic() > end or place.sandbox.closing:
            raise CellFailed(f"{what}: not seen within {deadline:g} s")
        time.sleep(0.02)


def wait_progressing(place: Place, count: Callable[[], int], goal: int, what: str) -> None:
    """Poll `count` until it reaches `goal`; CellFailed when it stood still for DEADLINE
    seconds, or once the selftest is ending. A slow machine (an emulated one took over 60 s
    for twenty runners) gets there step by step; a stuck one takes no step."""
    seen, since = count(), time.monotonic()
    while seen < goal:
        if time.monotonic() - since > DEADLINE or place.sandbox.closing:
            raise CellFailed(f"{what}: {seen} of {goal}, none more within {DEADLINE:g} s")
        time.sleep(0.02)
        now = count()
        if now > seen:
            seen, since = now, time.monotonic()


def expect(condition: bool, reason: str) -> None:
    if not condition:
        raise CellFailed(reason)


@dataclass(frozen=True)
class Cell:
    """One proof: its name, what it proves, the check, the switches that must turn it red."""

    name: str
    proves: str
    check: Callable[[Place], str]
    reddened_by: tuple[str, ...] = ()


CELLS: dict[str, Cell] = {}
"""This module's cells by name, in the order the table lists them (every_cell.py adds the
guards')."""


def cell(name: str, proves: str, *reddened_by: str) -> Callable[[Callable[[Place], str]], Cell]:
    """Register the decorated check as a cell."""

    def register(check: Callable[[Place], str]) -> Cell:
        made = Cell(name, proves, check, reddened_by)
        CELLS[name] = made
        return made

    return register


# ---- the memory cage ------------------------------------------------------------------------


@cell("own-cap", "a job over its own cap exits 250", "no-oom-verdict")
def own_cap(place: Place) -> str:
    place.caged_config(128)
    done = place.swarmdeck("run", "--cap", "24M", "--", *hog(48), timeout=DEADLINE)
    expect(done.code == 250, f"exit {done.code}, not 250: {done.tail()}")
    expect("hit its own memory cap" in done.err, f"no own-cap line: {done.tail()}")
    return "exit 250, 'hit its own memory cap of 24M'"


@cell("slice-full", "a job squeezed by the full slice exits 254; the other survives",
      "no-oom-verdict")
def slice_full(place: Place) -> str:
    """Both book 40M of a 100M slice; the holder grows to 70M and holds it, then the grower
    asks for 50M: the slice fills and the kernel takes the bigger one, the holder."""
    place.caged_config(100, default_prediction="40M", cap_factor=2.0)
    grow_holder, grow_grower = place.root / "grow-holder", place.root / "grow-grower"
    holder_up, grower_up = place.root / "holder-up", place.root / "grower-up"
    holder = place.start(swarmdeck_argv(
        "run", "--label", "holder", "--", *hog(70, hold=600, after=grow_holder, started=holder_up)
    ))
    _wait_started(place, holder, holder_up, "the holder")
    grower = place.start(swarmdeck_argv(
        "run", "--label", "grower", "--", *hog(50, after=grow_grower, started=grower_up)
    ))
    _wait_started(place, grower, grower_up, "the grower")
    grow_holder.touch()
    assert holder.stdout is not None
    expect(holder.stdout.readline() == "held\n", "the holder never held its 70M")
    grow_grower.touch()
    held = place.finish(holder, DEADLINE)
    grew = place.finish(grower, DEADLINE)
    expect(held.code == 254, f"the holder exited {held.code}, not 254: {held.tail()}")
    expect(grew.code == 0, f"the grower exited {grew.code}, not 0: {grew.tail()}")
    return "the holder exit 254 (slice full), the grower exit 0"


def _wait_started(
    place: Place, runner: subprocess.Popen[str], started: Path, who: str
) -> None:
    """Wait until the job touched `started`; a runner that ended first fails the cell at once."""
    wait_until(place, lambda: started.exists() or runner.poll() is not None, f"{who} started")
    if not started.exists():
        done = place.finish(runner, DEADLINE)
        raise CellFailed(f"{who} ended before its job started: exit {done.code}: {done.tail()}")


@cell("never-fits", "a booking that can never fit exits 252 at once", "no-never-fits")
def never_fits(place: Place) -> str:
    place.caged_config(64)
    ran = place.root / "ran"
    done = place.swarmdeck("run", "--cap", "1G", "--wait", "8", "--", "touch", str(ran))
    expect(done.code == 252, f"exit {done.code}, not 252: {done.tail()}")
    expect("can never fit" in done.err, f"queued instead of refused at once: {done.tail()}")
    expect(not ran.exists(), "the job ran")
    return "exit 252 at once, 'can never fit'; nothing ran"


ADMISSION_RUNNERS = 20


@cell("admissions", f"{ADMISSION_RUNNERS} concurrent admissions never overbook the slice",
      "no-admission-lock")
def admissions(place: Place) -> str:
    """A 64M slice holds two jobs capped at 24M: of the runners started at once, at most two
    may be running together; the rest are refused (252: --wait 0)."""
    place.caged_config(64)
    # The ledger is made first: twenty first runs making it at once race over the new file (in
    # the cgroup v2 guest one was refused, 251), which is the state file's matter, not
    # admission's.
    from swarmdeck.state import StateStore

    StateStore(place.state_dir / "state.db").close()
    fits = 64 // 24
    release = place.root / "release"
    runners = []
    for number in range(ADMISSION_RUNNERS):
        up = place.root / f"up-{number}"
        job = f'touch "{up}"; {until_file(release)}'
        argv = swarmdeck_argv("run", "--cap", "24M", "--wait", "0", "--", "sh", "-c", job)
        runners.append((up, place.start(argv)))

    def decided() -> int:
        return sum(up.exists() or proc.poll() is not None for up, proc in runners)

    try:
        wait_progressing(place, decided, len(runners), "runners admitted or refused")
        running = sum(1 for up, _ in runners if up.exists())
    finally:
        release.touch()
    ended = [place.finish(proc, DEADLINE) for _, proc in runners]
    expect(running <= fits, f"{running} jobs of 24M ran at once in a 64M slice: overbooked")
    expect(running >= 1, "no job was admitted at all")
    others = [done for done in ended if done.code not in (0, 252)]
    if others:
        raise CellFailed(f"a runner exited {others[0].code}, neither 0 nor 252: {others[0].tail()}")
    return f"{running} of {ADMISSION_RUNNERS} ran at once (room for {fits}); the rest exit 252"


@cell("no-cage", "a missing cage backend exits 251 and nothing runs", "no-cage-fallback")
def no_cage(place: Place) -> str:
    place.write_config(place.root / "not-a-cgroup" / "slice", 64)
    ran = place.root / "ran"
    done = place.swarmdeck("run", "--", "touch", str(ran))
    expect(not ran.exists(), "the job ran uncaged")
    expect(done.code == 251, f"exit {done.code}, not 251: {done.tail()}")
    expect("no memory cage can be set up" in done.err, f"no cage line: {done.tail()}")
    return "exit 251, 'no memory cage can be set up'; nothing ran"


# ---- the peer ---------------------------------------------------------------------------------


def _peer_config(place: Place, known_hosts: Path, extra: str = "") -> None:
    server = place.sandbox.peer()
    command = " ".join(swarmdeck_argv())
    place.write_config(
        place.root / "not-a-cgroup", 64,
        extra=server.host_entry(PEER_NAME, known_hosts)
        + f'run_root = "{place.root / "peer-runs"}"\n'
        + 'toolchains = ["git --version"]\n'
        + f"swarmdeck = {json.dumps(command)}\n" + extra,
    )


@cell("peer-disabled", "a disabled peer exits 78 and nothing runs, here or there",
      "no-peer-switch")
def peer_disabled(place: Place) -> str:
    known = place.sandbox.peer().known_hosts(place.root / "known_hosts")
    _peer_config(place, known, "enabled = false\n")
    ran = place.root / "ran"
    done = place.swarmdeck("peer", "run", PEER_NAME, "--", "touch", str(ran))
    expect(not ran.exists(), "the job ran here")
    expect(done.code == 78, f"exit {done.code}, not 78: {done.tail()}")
    expect("disabled" in done.err, f"no 'disabled' line: {done.tail()}")
    return "exit 78, 'peer box is disabled'; nothing ran"


@cell("peer-host-key", "a peer whose host key changed is refused", "no-host-key")
def peer_host_key(place: Place) -> str:
    import asyncssh

    server = place.sandbox.peer()
    other = asyncssh.generate_private_key("ssh-ed25519")
    known = server.known_hosts(place.root / "known_hosts", other)
    _peer_config(place, known)
    done = place.swarmdeck("peer", "check", PEER_NAME)
    expect("host key not trusted" in done.err, f"the changed key was accepted: {done.tail()}")
    expect(done.code == 78, f"exit {done.code}, not 78: {done.tail()}")
    return "exit 78, 'host key not trusted'"


@cell("peer-redact", "a peer run's output shows the peer's host name redacted", "no-redact")
def peer_redact(place: Place) -> str:
    if shutil.which("git") is None:
        raise CellSkipped("git is not installed: a peer run copies what git tracks")
    server = place.sandbox.peer()
    if place.sandbox.peer_slice is None:
        raise CellSkipped(place.sandbox.cage_problem or "the peer has no slice")
    _peer_config(place, server.known_hosts(place.root / "known_hosts"))
    work = place.root / "work"
    (work / "job.sh").write_text("uname -n\n")
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "check": True}
    subprocess.run(["git", "init", "-q", str(work)], **quiet)
    subprocess.run(["git", "-C", str(work), "add", "job.sh"], **quiet)
    done = place.swarmdeck("peer", "run", PEER_NAME, "--", "sh", "job.sh", cwd=work,
                           timeout=DEADLINE)
    expect(done.code == 0, f"exit {done.code}: {done.tail()}")
    expect(os.uname().nodename not in done.out, "the peer's host name was shown")
    expect(f"<{PEER_NAME}>" in done.out, f"no '<{PEER_NAME}>' in its output: {done.out[:80]}")
    return f"'uname -n' there printed as <{PEER_NAME}>"


# ---- locks and kills --------------------------------------------------------------------------


def _sleeper(place: Place) -> tuple[int, int]:
    """A process of the cell's own that only sleeps: (pid, start ticks)."""
    proc = place.start(["sleep", "600"])
    ticks = start_ticks(proc.pid)
    if ticks is None:
        raise CellFailed("a sleep process ended at once")
    return proc.pid, ticks


def _hold_lock(place: Place) -> tuple[Path, Path]:
    """A workspace lock held by a live sleep process; (workspace, lock file)."""
    from swarmdeck.probes.locks import lock_file_for

    workspace = place.root / "work"
    holder, _ = _sleeper(place)
    done = place.swarmdeck("lock", "acquire", str(workspace), "--pid", str(holder),
                           "--session", "holder", "--no-wait")
    expect(done.code == 0, f"the first lock was not taken: exit {done.code}: {done.tail()}")
    return workspace, lock_file_for(workspace, place.state_dir / "locks")


def _take_lock(place: Place, workspace: Path) -> tuple[int, str]:
    taker, _ = _sleeper(place)
    done = place.swarmdeck("lock", "acquire", str(workspace), "--pid", str(taker),
                           "--session", "taker", "--no-wait")
    return done.code, done.tail()


@cell("lock-stale", "a lock whose holder's pid was reused is taken over", "no-pid-start-check")
def lock_stale(place: Place) -> str:
    workspace, lock_file = _hold_lock(place)
    record = json.loads(lock_file.read_text())
    record["start_ticks"] -= 1
    lock_file.write_text(json.dumps(record))
    code, said = _take_lock(place, workspace)
    expect(code == 0, f"the stale lock was not taken over: exit {code}: {said}")
    return "taken over: 'pid now belongs to another process'"


@cell("lock-live", "a lock whose holder lives is not taken over", "no-lock-takeover-check")
def lock_live(place: Place) -> str:
    workspace, _ = _hold_lock(place)
    code, said = _take_lock(place, workspace)
    expect(code == 78, f"a live holder's lock was taken: exit {code}: {said}")
    expect("held by session holder" in said, f"refused for another reason: {said}")
    return "exit 78, 'held by session holder'"


def _kill_request(place: Place, pid: int, ticks: int) -> int:
    """A pending kill request for (pid, ticks) in the place's state, as the watchdog files one."""
    from swarmdeck.state import StateStore

    store = StateStore(place.state_dir / "state.db")
    try:
        with store.transaction() as conn:
            cursor = conn.execute(
                "INSERT INTO kill_requests (host, pid, start_ticks, command, reason, state,"
                " requested_at, requested_by) VALUES (?, ?, ?, 'sleep 600', 'selftest',"
                " 'pending', ?, 'selftest')",
                (local_host_name(), pid, ticks, time.time()),
            )
            return int(cursor.lastrowid or 0)
    finally:
        store.close()


def _approve(place: Place, pid: int, ticks: int, asked_ticks: int) -> tuple[int, str, bool]:
    """Approve a kill request for (pid, asked_ticks); (exit, its line, whether the process
    (pid, ticks) still lives)."""
    request = _kill_request(place, pid, asked_ticks)
    done = place.swarmdeck("approve", str(request))
    stat = read_stat(pid)
    alive = stat is not None and stat.start_ticks == ticks and stat.state != "Z"
    return done.code, done.tail(), alive


@cell("kill-unsupervised", "a kill request for a process not supervised is refused",
      "no-supervised-check")
def kill_unsupervised(place: Place) -> str:
    pid, ticks = _sleeper(place)
    code, said, alive = _approve(place, pid, ticks, ticks)
    expect(alive, f"the unsupervised process was killed ({said})")
    expect(code == 78, f"exit {code}, not 78: {said}")
    expect("not a job or agent swarmdeck supervises" in said, f"refused for another reason: {said}")
    return "exit 78, 'not a job or agent swarmdeck supervises'; it lives"


@cell("kill-reused-pid", "a kill request whose pid was reused is refused", "no-pid-start-check")
def kill_reused_pid(place: Place) -> str:
    """The process is supervised (a live Claude Code session of the place's own), but the
    request was for an earlier process with the same pid."""
    pid, ticks = _sleeper(place)
    sessions = place.claude_dir / "sessions"
    sessions.mkdir(parents=True, exist_ok=True)
    (sessions / f"{pid}.json").write_text(json.dumps(
        {"pid": pid, "sessionId": "selftest-session", "cwd": str(place.root),
         "procStart": str(ticks)}
    ))
    code, said, alive = _approve(place, pid, ticks, ticks - 1)
    expect(alive, f"the process now holding the pid was killed ({said})")
    expect(code == 78, f"exit {code}, not 78: {said}")
    expect("now names another process" in said, f"refused for another reason: {said}")
    return "exit 78, 'pid now names another process'; it lives"

