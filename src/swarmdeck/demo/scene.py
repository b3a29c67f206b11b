"""The demo scene: everything `swarmdeck demo` starts, in one temporary folder, and its removal.

The scene points this process (and so everything it starts) at its own state folder, config
and Claude Code folder through SWARMDECK_STATE_DIR, SWARMDECK_CONFIG and CLAUDE_CONFIG_DIR,
caps its jobs in a small slice of its own, and reaches a second host that is this machine over
SSH on 127.0.0.1. `stop()` ends every process it started, removes its cgroups and its folder,
and gives this process its environment back. A scene killed before it could stop is removed by
the next one: `sweep_abandoned` finds it by the owner file in its folder (demo/owner.py).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from swarmdeck.actions.cage import CageError, remove_cgroup
from swarmdeck.actions.cage.scope import user_flag
from swarmdeck.demo.jobs import (
    MIB,
    SLICE_MIB,
    JobSpec,
    StartedJob,
    demo_jobs,
    job_checkout,
    start_job,
)
from swarmdeck.demo.loopback import LoopbackSshServer
from swarmdeck.demo.owner import PREFIX, abandoned_scenes, write_owner
from swarmdeck.demo.sessions import DemoSession, ScriptRunner, scripted_sessions
from swarmdeck.errors import SwarmdeckError
from swarmdeck.exitcodes import ExitCode
from swarmdeck.probes.cgroups import SCOPE, SliceSite, chosen_site, slice_sites, why_no_site
from swarmdeck.probes.ledger import ACTIVE, QUEUED, ledger_jobs
from swarmdeck.probes.machine import mem_total
from swarmdeck.probes.procs import environment, pids, read_stat
from swarmdeck.state import StateStore

ENVIRONMENT = ("SWARMDECK_STATE_DIR", "SWARMDECK_CONFIG", "CLAUDE_CONFIG_DIR")
"""What the scene sets for itself and everything it starts, and restores when it stops."""
PEER_NAME = "loopback"
PEER_SLICE_MIB = 2048
ADMISSION_TIMEOUT = 60.0


class SceneError(SwarmdeckError):
    """The scene could not be set up (exit 78); what it had started is already removed."""

    exit_code = ExitCode.REFUSED


@dataclass(frozen=True)
class SceneSettings:
    """The scene's pace and the cgroup its jobs are capped in."""

    step: float = 2.0
    slice_name: str | None = None
    """The slice, at the hierarchy's root; None: swarmdeck-demo-PID."""
    uncaged: bool = False
    """Run the jobs uncaged even where cages can be made, as where they cannot."""
    watchdog: bool = False
    """Run `swarmdeck watch` beside the scene (the app runs the same engine itself)."""


def demo_config(
    slice_setting: str, peer: str, total: int, slice_mib: int = SLICE_MIB
) -> str:
    """The scene's config: a small slice, quick refreshes, watchdog thresholds in seconds."""
    reserve = total - slice_mib * MIB
    return (
        "[memory]\n"
        f'slice = "{slice_setting}"\n'
        f'reserve = "{reserve}B"\n'
        'margin = "16M"\n'
        'default_prediction = "64M"\n'
        "sample_interval = 0.25\n"
        "\n[ui]\n"
        "refresh_interval = 1.0\n"
        "history_minutes = 2\n"
        "\n[watchdog]\n"
        "interval = 2.0\n"
        "tool_call_max = 30.0\n"
        "idle_max = 120.0\n"
        "output_stall = 60.0\n"
        "long_run = 10.0\n"
        "min_duration = 5.0\n"
        "merge_interval = 30.0\n"
        "\n" + peer
    )


@dataclass
class Scene:
    """A demo scene under `root` (a fresh temporary folder unless given)."""

    settings: SceneSettings = field(default_factory=SceneSettings)
    root: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix=PREFIX)))
    say: Callable[[str], None] = print
    caged: bool = False
    site: SliceSite | None = None
    peer_site: SliceSite | None = None
    uncaged_reason: str = ""
    store: StateStore | None = None
    sessions: list[DemoSession] = field(default_factory=list)
    jobs: list[StartedJob] = field(default_factory=list)
    peer: LoopbackSshServer | None = None
    writer: ScriptRunner | None = None
    watcher: subprocess.Popen[bytes] | None = None
    _saved: dict[str, str | None] = field(default_factory=dict)

    @property
    def state_dir(self) -> Path:
        return self.root / "state"

    @property
    def config_path(self) -> Path:
        return self.root / "config.toml"

    @property
    def claude_dir(self) -> Path:
        return self.root / "claude"

    @property
    def slice_path(self) -> Path | None:
        caged = self.site is not None and self.caged and self.site.path is not None
        return Path(self.site.path) if caged else None

    def environment(self) -> dict[str, str]:
        return {
            "SWARMDECK_STATE_DIR": str(self.state_dir),
            "SWARMDECK_CONFIG": str(self.config_path),
            "CLAUDE_CONFIG_DIR": str(self.claude_dir),
        }

    def start(self) -> None:
        """Build the whole scene; on any failure remove what was built and raise SceneError."""
        try:
            self._start()
        except BaseException:
            self.stop()
            raise

    def _start(self) -> None:
        for name in ENVIRONMENT:
            self._saved[name] = os.environ.get(name)
        os.environ.update(self.environment())
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self.claude_dir.mkdir(parents=True, exist_ok=True)
        slice_setting = self._choose_slice()
        peer_slice = _peer_slice(slice_setting)
        write_owner(self.root, (slice_setting, peer_slice) if self.caged else (peer_slice,))
        total = mem_total()
        self.peer = self._start_peer(total, peer_slice)
        known = self.peer.known_hosts(self.root / "known_hosts")
        self.config_path.write_text(
            demo_config(
                slice_setting,
                self.peer.host_entry(PEER_NAME, known)
                + f'run_root = "{self.root / "peer" / "runs"}"\n',
                total,
            )
        )
        self.store = StateStore.open_default()
        self._start_sessions()
        self._start_jobs()
        if self.settings.watchdog:
            self._start_watchdog()

    def _start_watchdog(self) -> None:
        logs = self.root / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        with open(logs / "watch.log", "wb") as out:
            self.watcher = subprocess.Popen(
                [sys.executable, "-m", "swarmdeck.cli", "watch"],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def _choose_slice(self) -> str:
        """The scene's own slice, on the backend this machine offers; none means uncaged."""
        name = self.settings.slice_name or f"swarmdeck-demo-{os.getpid()}"
        sites = slice_sites(name)
        site = chosen_site(sites)
        if self.settings.uncaged:
            self.uncaged_reason = "asked for with --uncaged"
            self.say(f"swarmdeck demo: the demo's jobs run uncaged ({self.uncaged_reason})")
            return name
        if site is not None and site.backend == SCOPE and not name.endswith(".slice"):
            name = f"swarmdeckdemo{os.getpid()}.slice"
            site = chosen_site(slice_sites(name))
        if site is None:
            self.uncaged_reason = why_no_site(sites)
            self.say(
                "swarmdeck demo: no memory cage can be set up here, so the demo's jobs run "
                f"uncaged ({self.uncaged_reason})"
            )
            return name
        self.site = site
        self.caged = True
        return name

    def _start_peer(self, total: int, slice_setting: str) -> LoopbackSshServer:
        """The second host: this machine over SSH, with its own state, config and slice (made
        only if a job runs there, removed with the scene's)."""
        folder = self.root / "peer"
        folder.mkdir(parents=True, exist_ok=True)
        reserve = total - PEER_SLICE_MIB * MIB
        (folder / "config.toml").write_text(
            f'[memory]\nslice = "{slice_setting}"\nreserve = "{reserve}B"\n'
        )
        self.peer_site = chosen_site(slice_sites(slice_setting))
        return LoopbackSshServer(
            folder,
            env={
                "SWARMDECK_STATE_DIR": str(folder / "state"),
                "SWARMDECK_CONFIG": str(folder / "config.toml"),
                "CLAUDE_CONFIG_DIR": str(folder / "claude"),
            },
        )

    def _start_sessions(self) -> None:
        sessions, scripts = scripted_sessions(
            self.claude_dir, self.root / "work", self.settings.step
        )
        self.sessions = sessions
        for session in sessions:
            session.start_process()
        self.writer = ScriptRunner()
        for make, after in scripts:
            self.writer.add(make(), after)
        self.writer.start()

    def _start_jobs(self) -> None:
        """Start the jobs in order; if the first caged one finds no cage after all (the
        backend looked usable but refused, exit 251), run them all uncaged instead."""
        logs = self.root / "logs"
        checkout = job_checkout(self.root / "work" / "jobs")
        for spec in demo_jobs():
            job = start_job(spec, logs, self.caged, checkout)
            self.jobs.append(job)
            try:
                self._wait_for_admission(job)
            except SceneError:
                if not (self.caged and len(self.jobs) == 1 and job.process.returncode == 251):
                    raise
                self.uncaged_reason = _tail(job)
                self.say(
                    "swarmdeck demo: the memory cage could not be set up, so the demo's jobs "
                    f"run uncaged ({self.uncaged_reason})"
                )
                self.caged = False
                self.jobs.clear()
                self._start_jobs()
                return

    def _wait_for_admission(self, job: StartedJob) -> None:
        """Wait until the job's row is admitted (queued, for the one meant to queue), so the
        next job is booked after it and the slice fills in the intended order."""
        assert self.store is not None
        wanted = {QUEUED} if job.spec.queued else set(ACTIVE) - {QUEUED}
        deadline = time.monotonic() + ADMISSION_TIMEOUT
        while time.monotonic() < deadline:
            if any(
                row.label.startswith(job.spec.label) and row.state in wanted
                for row in ledger_jobs(self.store)
            ):
                return
            if job.process.poll() is not None:
                raise SceneError(_ended_early(job))
            time.sleep(0.05)
        raise SceneError(f"demo job {job.spec.label!r} was not admitted in time: {_tail(job)}")

    def stop(self) -> None:
        """Stop everything the scene started, remove its cgroups and folder, restore the env."""
        if self.writer is not None:
            self.writer.stop()
        if self.watcher is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.watcher.pid, signal.SIGKILL)
            self.watcher.wait()
        for job in self.jobs:
            if job.process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(job.process.pid, signal.SIGTERM)
        for job in self.jobs:
            job.stop()
        for session in self.sessions:
            session.stop_process()
        if self.peer is not None:
            self.peer.stop()
        _stop_strays(self.root)
        if self.store is not None:
            self.store.close()
        self._remove_slices()
        shutil.rmtree(self.root, ignore_errors=True)
        for name, value in self._saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        self._saved.clear()

    def _remove_slices(self) -> None:
        """Remove the scene's slice and the peer's, with any cage a runner left behind."""
        for site in (self.site, self.peer_site):
            if site is not None and site.path is not None:
                self._remove_slice(site)

    def _remove_slice(self, site: SliceSite) -> None:
        if site.backend == SCOPE:
            subprocess.run(
                ["systemctl", *user_flag(), "stop", site.unit],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                check=False,
            )
        if site.path is None or not os.path.exists(site.path):
            return
        path = Path(site.path)
        inner = sorted((p for p in path.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts))
        for cgroup in [*inner, path]:
            _kill_members(cgroup)
            try:
                remove_cgroup(cgroup)
            except CageError as error:
                self.say(f"swarmdeck demo: {error}")

    def __enter__(self) -> Scene:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def summary(self) -> str:
        """One line saying what the scene is made of and where it lives."""
        cage = f"caged in {self.slice_path}" if self.caged else "uncaged"
        return (
            f"demo scene in {self.root}: {len(self.sessions)} Claude Code sessions, "
            f"{len(self.jobs)} jobs ({cage}), peer {PEER_NAME!r} on 127.0.0.1:"
            f"{self.peer.port if self.peer else '?'}"
        )


def sweep_abandoned(folder: Path | None = None, say: Callable[[str], None] = print) -> list[Path]:
    """Remove what scenes killed before they could stop left in `folder` (the temporary
    directory): the processes pointing into their folders, their slices (the ones `stop()`
    would have removed), the folders. Says one line for each; returns the folders removed."""
    removed = []
    for root, owner in abandoned_scenes(folder or Path(tempfile.gettempdir())):
        leftover = Scene(root=root, say=say)
        _stop_strays(root)
        for name in owner.slices:
            site = chosen_site(slice_sites(name))
            if site is not None and site.path is not None:
                leftover._remove_slice(site)
        shutil.rmtree(root, ignore_errors=True)
        removed.append(root)
        say(
            f"swarmdeck demo: removed what an earlier demo (pid {owner.process.pid}) left when "
            f"it ended without cleaning up: {root}"
            + (f" and slices {', '.join(owner.slices)}" if owner.slices else "")
        )
    return removed


def _stop_strays(root: Path, grace: float = 10.0) -> None:
    """End what the scene's processes started on their own, in sessions of their own (a job
    moved to the peer is started detached there): every process whose environment points
    into the scene's folder. TERM first, so runners take their cages down; KILL after."""
    marker = ("=" + str(root) + "/").encode()
    strays = [pid for pid in pids() if pid != os.getpid() and marker in environment(pid)]
    for pid in strays:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while strays and time.monotonic() < deadline:
        strays = [pid for pid in strays if _alive(pid)]
        time.sleep(0.05)
    for pid in strays:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _alive(pid: int) -> bool:
    stat = read_stat(pid)
    return stat is not None and stat.state != "Z"


def _peer_slice(name: str) -> str:
    """The peer's slice beside the scene's: NAME-peer, or NAMEpeer.slice for a systemd unit."""
    return f"{name.removesuffix('.slice')}peer.slice" if name.endswith(".slice") else f"{name}-peer"


def _kill_members(cgroup: Path) -> None:
    try:
        pids = (cgroup / "cgroup.procs").read_text().split()
    except OSError:
        return
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(pid), signal.SIGKILL)


def _tail(job: StartedJob) -> str:
    try:
        lines = job.log.read_text(errors="replace").strip().splitlines()
    except OSError:
        return "no output"
    return lines[-1] if lines else "no output"


def _ended_early(job: StartedJob) -> str:
    return (
        f"demo job {job.spec.label!r} ended before it was admitted "
        f"(exit {job.process.returncode}): {_tail(job)}"
    )


__all__ = ["JobSpec", "Scene", "SceneError", "SceneSettings", "demo_config", "sweep_abandoned"]
