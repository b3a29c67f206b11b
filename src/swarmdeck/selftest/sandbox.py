"""The selftest's sandbox: a temporary folder, slices and processes of its own, all removed after.

Each cell gets a place (a folder with its own state folder, config and Claude Code folder) and
runs real `swarmdeck` processes pointed at it through the environment, in sessions of their
own. `close()` ends every process whose environment points into the sandbox (TERM, then KILL),
removes the slices it named (only names made of its own pid, proved by the site's path) and the
folder; the command line calls it on every way out, Ctrl-C and SIGTERM included. A selftest
killed outright (SIGKILL) leaves its folder with an owner file naming its process (pid, start
ticks) and the slices it made: the next selftest removes what such a dead owner left.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from swarmdeck.actions.cage import CageError, remove_cgroup
from swarmdeck.breaks import BREAK_VARIABLE, MARKER_VARIABLE, write_marker
from swarmdeck.probes.cgroups import SCOPE, SliceSite, cgroup_pids, chosen_site, slice_sites
from swarmdeck.probes.cgroups import why_no_site as _why_no_site
from swarmdeck.probes.machine import mem_total
from swarmdeck.probes.procs import ProcessIdentity, environment, own_identity, pids, read_stat

if TYPE_CHECKING:
    from swarmdeck.demo.loopback import LoopbackSshServer

PREFIX = "swarmdeck-selftest-"
OWNER_FILE = "owner"
MIB = 1 << 20
PLACE_VARIABLES = (
    "SWARMDECK_STATE_DIR", "SWARMDECK_CONFIG", "CLAUDE_CONFIG_DIR", "SWARMDECK_RUN_DIR",
    "XDG_CONFIG_HOME", "XDG_STATE_HOME",
)
"""What points a process at a place; every one is set, so nothing reaches the user's own.
No other SWARMDECK_ variable of the caller's is passed on: a cell runs as the table says."""
PEER_NAME = "box"
PEER_SLICE_MIB = 256


class CellFailed(Exception):
    """The cell's guard did not hold; the message is the one-line reason."""


class CellSkipped(Exception):
    """The cell cannot run here; the message says why (never a silent pass)."""


@dataclass
class Done:
    """A finished process: its exit status and output (what `run` gives back)."""

    code: int
    out: str
    err: str

    def tail(self) -> str:
        """The last line of its stderr (else stdout), for a one-line reason."""
        lines = (self.err or self.out).strip().splitlines()
        return lines[-1][:160] if lines else "(no output)"


def swarmdeck_argv(*args: str) -> list[str]:
    """This swarmdeck, as a command: the running interpreter with the package's entry point."""
    return [sys.executable, "-m", "swarmdeck.cli", *args]


@dataclass
class Place:
    """One cell's folder in one pass, and how its processes are started."""

    sandbox: Sandbox
    root: Path
    switch: str | None
    started: list[subprocess.Popen[str]] = field(default_factory=list)

    @property
    def state_dir(self) -> Path:
        return self.root / "state"

    @property
    def config(self) -> Path:
        return self.root / "config.toml"

    @property
    def claude_dir(self) -> Path:
        return self.root / "claude"

    def env(self) -> dict[str, str]:
        """The environment of every process of this cell: this place, and the switch if any."""
        whole = {
            key: value for key, value in os.environ.items()
            if key not in PLACE_VARIABLES and not key.startswith("SWARMDECK_")
        }
        whole.update({
            "SWARMDECK_STATE_DIR": str(self.state_dir),
            "SWARMDECK_CONFIG": str(self.config),
            "CLAUDE_CONFIG_DIR": str(self.claude_dir),
            "SWARMDECK_RUN_DIR": str(self.root / "run"),
            "XDG_CONFIG_HOME": str(self.root / "xdg-config"),
            "XDG_STATE_HOME": str(self.root / "xdg-state"),
            MARKER_VARIABLE: str(self.sandbox.marker),
        })
        if self.switch:
            whole[BREAK_VARIABLE] = self.switch
        return whole

    def start(
        self, argv: list[str], cwd: Path | None = None, *, stdin: bool = False
    ) -> subprocess.Popen[str]:
        """Start `argv` in a session of its own, pointed at this place; with `stdin`, its input
        is a pipe to write to (else it reads nothing)."""
        if self.sandbox.closing:
            raise CellFailed("stopped: the selftest is ending")
        proc = subprocess.Popen(
            argv, cwd=cwd or self.root, env=self.env(),
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
        )
        self.started.append(proc)
        return proc

    def finish(self, proc: subprocess.Popen[str], timeout: float) -> Done:
        """Wait for `proc` at most `timeout` seconds; past it, its session is killed and the
        cell fails saying so."""
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            kill_session(proc.pid)
            proc.communicate()
            raise CellFailed(f"did not end within {timeout:g} s") from None
        return Done(proc.returncode, out, err)

    def swarmdeck(self, *args: str, timeout: float = 30.0, cwd: Path | None = None) -> Done:
        """Run `swarmdeck ARGS` here to its end."""
        return self.finish(self.start(swarmdeck_argv(*args), cwd), timeout)

    def write_config(self, slice_setting: str | Path, slice_mib: int, extra: str = "",
                     **memory: object) -> None:
        """This place's config: its slice capped at `slice_mib`, quick sampling, no waiting."""
        settings: dict[str, object] = {
            "slice": str(slice_setting),
            "reserve": f"{mem_total() - slice_mib * MIB}B",
            "margin": "1M",
            "sample_interval": 0.05,
            "admission_wait": 0.0,
            "default_prediction": "16M",
        }
        settings.update(memory)
        lines = ["[memory]", *(f"{key} = {json.dumps(value)}" for key, value in settings.items())]
        self.config.write_text("\n".join(lines) + "\n\n" + extra)

    def caged_config(self, slice_mib: int, **memory: object) -> None:
        """A config naming a new slice of this sandbox's own (the cell is skipped without one)."""
        self.write_config(self.sandbox.new_slice(), slice_mib, **memory)

    def end(self) -> None:
        """Kill what this place started and is still running."""
        for proc in self.started:
            if proc.poll() is None:
                kill_session(proc.pid)
            with contextlib.suppress(subprocess.TimeoutExpired, ValueError, OSError):
                proc.communicate(timeout=5)


def kill_session(sid: int) -> None:
    """SIGKILL every live process of session `sid` (one this sandbox started) until none is left."""
    for _ in range(250):
        members = [
            pid for pid in pids()
            if (stat := read_stat(pid)) is not None and stat.session == sid and stat.state != "Z"
        ]
        if not members:
            return
        for pid in members:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.02)


class Sandbox:
    """The selftest's own temporary folder, slices and loopback peer."""

    def __init__(self) -> None:
        sweep_abandoned(Path(tempfile.gettempdir()))
        self.root = Path(tempfile.mkdtemp(prefix=PREFIX))
        me = own_identity()
        (self.root / OWNER_FILE).write_text(f"{me.pid} {me.start_ticks}\n")
        self.marker = self.root / "selftest.marker"
        self.closing = False
        """Set once the run ends (or is interrupted): no cell starts anything after it."""
        write_marker(str(self.marker))
        self._lock = threading.Lock()
        self._names = itertools.count(1)
        self._slices: list[SliceSite] = []
        self._peer: LoopbackSshServer | None = None
        self._peer_problem: str | None = None
        self.peer_slice: str | None = None
        sites = slice_sites(self._slice_name(0))
        site = chosen_site(sites)
        self.cage_problem: str | None = None if site is not None else (
            f"no memory cage here: {_why_no_site(sites)}"
        )

    def _slice_name(self, number: int) -> str:
        name = f"swarmdeck-selftest-{os.getpid()}-{number}"
        site = chosen_site(slice_sites(name))
        if site is not None and site.backend == SCOPE:
            return f"swarmdeckselftest{os.getpid()}x{number}.slice"
        return name

    def place(self, name: str, switch: str | None) -> Place:
        """A fresh folder for one cell in one pass."""
        with self._lock:
            number = next(self._names)
        root = self.root / f"{number:03d}-{name}"
        for sub in ("state", "claude", "work"):
            (root / sub).mkdir(parents=True)
        (root / "config.toml").write_text("# a selftest cell's config: the defaults\n")
        return Place(self, root, switch)

    def new_slice(self) -> str:
        """The setting of a slice of this sandbox's own (made by the first run that claims it,
        removed by `close`); CellSkipped when no cage can be made here."""
        if self.cage_problem is not None:
            raise CellSkipped(self.cage_problem)
        with self._lock:
            name = self._slice_name(next(self._names))
            site = chosen_site(slice_sites(name))
            if site is None:
                raise CellSkipped(_why_no_site(slice_sites(name)))
            self._made(site, name)
        return name

    def _made(self, site: SliceSite, name: str) -> None:
        """Remember a slice to remove, here and in the owner file (for a later sweep)."""
        self._slices.append(site)
        with open(self.root / OWNER_FILE, "a") as owner:
            owner.write(name + "\n")

    def peer(self) -> LoopbackSshServer:
        """The loopback SSH peer (asyncssh's server on 127.0.0.1), started on first use, with
        its own state, config and slice."""
        with self._lock:
            if self._peer is not None:
                return self._peer
            if self._peer_problem is not None:
                raise CellSkipped(self._peer_problem)
            try:
                from swarmdeck.demo.loopback import LoopbackSshServer
            except ImportError as error:
                self._peer_problem = f"no SSH server to make a peer with ({error})"
                raise CellSkipped(self._peer_problem) from None
            folder = self.root / "peer"
            folder.mkdir()
            setting = "not-a-cgroup"
            if self.cage_problem is None:
                setting = self._slice_name(next(self._names))
                site = chosen_site(slice_sites(setting))
                if site is not None:
                    self._made(site, setting)
                    self.peer_slice = setting
            reserve = mem_total() - PEER_SLICE_MIB * MIB
            (folder / "config.toml").write_text(
                f'[memory]\nslice = "{setting}"\nreserve = "{reserve}B"\n'
                'default_prediction = "16M"\nsample_interval = 0.05\n'
            )
            self._peer = LoopbackSshServer(folder, env={
                "SWARMDECK_STATE_DIR": str(folder / "state"),
                "SWARMDECK_CONFIG": str(folder / "config.toml"),
                "CLAUDE_CONFIG_DIR": str(folder / "claude"),
                "SWARMDECK_RUN_DIR": str(folder / "run"),
            })
            return self._peer

    def close(self) -> None:
        """End every process pointing into the sandbox, remove its slices and its folder."""
        if self._peer is not None:
            self._peer.stop()
            self._peer = None
        stop_strays(self.root)
        for site in self._slices:
            remove_slice(site)
        self._slices.clear()
        shutil.rmtree(self.root, ignore_errors=True)


def sweep_abandoned(folder: Path) -> list[Path]:
    """Remove what selftests killed before they could clean up left in `folder`: processes
    pointing into their sandboxes, the slices their owner files name, the folders. Only this
    user's folders whose owner file names a process that is gone are taken."""
    removed = []
    for entry in sorted(folder.glob(PREFIX + "*")):
        try:
            facts = entry.lstat()
            first, *names = (entry / OWNER_FILE).read_text().splitlines()
            pid, ticks = (int(part) for part in first.split())
        except (OSError, ValueError):
            continue
        if not entry.is_dir() or entry.is_symlink() or facts.st_uid != os.geteuid():
            continue
        if ProcessIdentity(pid, ticks).is_alive():
            continue
        stop_strays(entry)
        for name in names:
            site = chosen_site(slice_sites(name)) if name.startswith(_slice_prefixes(pid)) else None
            if site is not None:
                remove_slice(site)
        shutil.rmtree(entry, ignore_errors=True)
        removed.append(entry)
    _sweep_orphan_slices()
    return removed


def _sweep_orphan_slices() -> None:
    """Remove slices named for a selftest whose process is gone, wherever its folder was (a
    selftest killed outright under another TMPDIR): the name holds the pid, as the tests'
    slices do; one whose pid runs again is left alone."""
    site = chosen_site(slice_sites(f"{PREFIX}0-0"))
    if site is None or site.path is None or site.backend == SCOPE:
        return
    parent = Path(site.path).parent
    try:
        entries = list(parent.glob(PREFIX + "*-*"))
    except OSError:
        return
    for entry in entries:
        pid = entry.name[len(PREFIX):].split("-", 1)[0]
        if pid.isdigit() and not os.path.exists(f"/proc/{pid}") and entry.is_dir():
            remove_slice(SliceSite(site.backend, True, "", str(entry)))


def _slice_prefixes(pid: int) -> tuple[str, str]:
    """How the slices of the selftest with this pid are named: nothing else is ever removed."""
    return (f"swarmdeck-selftest-{pid}-", f"swarmdeckselftest{pid}x")


def stop_strays(root: Path, grace: float = 5.0) -> None:
    """TERM, then KILL, every process whose environment points into `root` (what the cells
    started, detached runners and peer jobs included): runners take their cages down on TERM."""
    marker = ("=" + str(root) + "/").encode()
    strays = [pid for pid in pids() if pid != os.getpid() and marker in environment(pid)]
    for pid in strays:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while strays and time.monotonic() < deadline:
        strays = [pid for pid in strays if (stat := read_stat(pid)) and stat.state != "Z"]
        time.sleep(0.05)
    for pid in strays:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def remove_slice(site: SliceSite) -> None:
    """Remove one of the sandbox's slices with whatever cages a runner left in it."""
    if site.backend == SCOPE and site.unit:
        from swarmdeck.actions.cage.scope import user_flag

        subprocess.run(
            ["systemctl", *user_flag(), "stop", site.unit],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False,
        )
    if site.path is None or not os.path.isdir(site.path):
        return
    path = Path(site.path)
    inner = sorted((p for p in path.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts))
    for cgroup in [*inner, path]:
        for _ in range(100):
            for pid in cgroup_pids(cgroup):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            try:
                remove_cgroup(str(cgroup))
                break
            except CageError:
                time.sleep(0.02)
