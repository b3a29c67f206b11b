"""The demo scene: everything `swarmdeck demo` starts, in one temporary folder, and its removal.

The scene points this process (and so everything it starts) at its own state folder, config
and Claude Code folder through SWARMDECK_STATE_DIR, SWARMDECK_CONFIG and CLAUDE_CONFIG_DIR,
caps its jobs in a small slice it makes itself, and reaches a second host that is this machine
over SSH on 127.0.0.1. `stop()` ends every process it started, removes its cgroups and its
folder, and gives this process its environment back. It stops and removes only what it made,
proven by what it recorded as it made it (demo/scene_record.py): its processes carry its token, its
cgroups and folder are the ones made (device and inode). A scene killed before it could stop is
removed by the next one: `sweep_abandoned` finds it by the owner file in its folder.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from swarmdeck.actions.cage import CageError, backend_for
from swarmdeck.actions.cage.slice_claim import claim_slice, release_claim
from swarmdeck.actions.kill import PinnedProcess
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
from swarmdeck.demo.scene_record import (
    PREFIX,
    SCENE_VARIABLE,
    MadeThing,
    SceneOwner,
    abandoned_scenes,
    write_owner,
)
from swarmdeck.demo.sessions import DemoSession, ScriptRunner, scripted_sessions
from swarmdeck.demo.slices import (
    SliceRefused,
    make_cgroup,
    peer_slice_name,
    slice_refusal,
    stop_unit,
    take_down,
)
from swarmdeck.demo.strays import remove_folder, scene_process, stop_strays
from swarmdeck.errors import SwarmdeckError
from swarmdeck.exitcodes import ExitCode
from swarmdeck.ledger.schema import ACTIVE, QUEUED
from swarmdeck.probes.cgroups import SCOPE, SliceSite, chosen_site, slice_sites, why_no_site
from swarmdeck.probes.machine import mem_total
from swarmdeck.probes.memory_book import ledger_jobs
from swarmdeck.probes.procs import own_identity
from swarmdeck.state import StateStore

ENVIRONMENT = ("SWARMDECK_STATE_DIR", "SWARMDECK_CONFIG", "CLAUDE_CONFIG_DIR", SCENE_VARIABLE)
"""What the scene sets for itself and everything it starts, and restores when it stops."""
NAME_TRIES = 5
"""Names tried for the scene's own slice when the first is taken (a leftover of a killed demo
that had this pid); one of them is free unless something makes such names on purpose."""
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
    """The slice, which must not exist yet; None: swarmdeck-demo-PID."""
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
    """A demo scene under `root`: a fresh temporary folder unless given (a given folder is the
    scene's to remove, as the one it makes)."""

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
    token: str = field(default_factory=lambda: secrets.token_hex(16))
    """What every process the scene starts carries in SCENE_VARIABLE, and nothing else has."""
    owner: SceneOwner | None = None
    """What the scene made, as recorded in its folder; None until it made its folder its own."""
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
        self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._record(SceneOwner(own_identity(), self.token, MadeThing.of(self.root)))
        slice_setting = self._choose_slice()
        for name in ENVIRONMENT:
            self._saved[name] = os.environ.get(name)
        os.environ.update(self.environment())
        os.environ[SCENE_VARIABLE] = self.token
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self.claude_dir.mkdir(parents=True, exist_ok=True)
        peer_slice = peer_slice_name(slice_setting)
        self.peer_site = chosen_site(slice_sites(peer_slice))
        self._make_slices(peer_slice)
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

    def _record(self, owner: SceneOwner) -> None:
        """Write what the scene made into its folder before anything else is made or started."""
        write_owner(owner)
        self.owner = owner

    def _choose_slice(self) -> str:
        """The scene's own slice, on the backend this machine offers; none means uncaged.
        SliceRefused when the name given is one the scene may not make (demo/slices.py)."""
        name = self.settings.slice_name or _free_name(f"swarmdeck-demo-{os.getpid()}")
        sites = slice_sites(name)
        site = chosen_site(sites)
        if site is not None and site.backend == SCOPE and not name.endswith(".slice"):
            name = _free_name(f"swarmdeckdemo{os.getpid()}", ".slice")
            sites = slice_sites(name)
            site = chosen_site(sites)
        problem = slice_refusal(name)
        if problem:
            raise SliceRefused(problem)
        if self.settings.uncaged:
            self.uncaged_reason = "asked for with --uncaged"
            self.say(f"swarmdeck demo: the demo's jobs run uncaged ({self.uncaged_reason})")
            return name
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

    def _make_slices(self, peer_slice: str) -> None:
        """Make the scene's slice (when caged) and its peer's, recording each in the owner file
        before it is made (a cgroup by device and inode, a systemd slice unit by name), then
        claim each for its ledger (actions/cage/slice_claim.py), the record its removal requires."""
        peer = self.root / "peer"
        slices = [(self.peer_site, peer / "state" / "state.db", peer / "config.toml",
                   PEER_SLICE_MIB * MIB)]
        if self.caged:
            slices.insert(0, (self.site, self.state_dir / "state.db", self.config_path,
                              SLICE_MIB * MIB))
        for site, ledger, config, cap in slices:
            if site is None or site.path is None or self.owner is None:
                continue
            before = self.owner
            if site.backend == SCOPE:
                self._record(replace(before, units=(*before.units, site.unit)))
            else:
                made = make_cgroup(site.path)
                self._record(replace(before, cgroups=(*before.cgroups, made)))
            try:
                claim_slice(backend_for(site), ledger, config, cap)
            except CageError as error:
                if site.backend != SCOPE:
                    # Unclaimed, it could not be proven the scene's later: it goes now, empty.
                    with contextlib.suppress(OSError):
                        os.rmdir(site.path)
                    self._record(before)
                if site is not self.site:
                    raise SceneError(f"the peer's slice cannot be set up: {error}") from None
                self.caged = False
                self.uncaged_reason = str(error)
                self.say(
                    "swarmdeck demo: the memory cage could not be set up, so the demo's jobs "
                    f"run uncaged ({self.uncaged_reason})"
                )

    def _start_peer(self, total: int, slice_setting: str) -> LoopbackSshServer:
        """The second host: this machine over SSH, with its own state, config and slice (made
        and removed with the scene's)."""
        folder = self.root / "peer"
        folder.mkdir(parents=True, exist_ok=True)
        reserve = total - PEER_SLICE_MIB * MIB
        (folder / "config.toml").write_text(
            f'[memory]\nslice = "{slice_setting}"\nreserve = "{reserve}B"\n'
        )
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
            job.terminate()
        for job in self.jobs:
            job.stop()
        for session in self.sessions:
            session.stop_process()
        if self.peer is not None:
            self.peer.stop()
        owner = self.owner
        if owner is not None:
            stop_strays(self.root, owner.token)
        if self.store is not None:
            self.store.close()
        if owner is not None:
            for line in _take_down_slices(owner):
                self.say(f"swarmdeck demo: {line}")
            left = remove_folder(owner.folder)
            if left:
                self.say(f"swarmdeck demo: {left}")
        for name, value in self._saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        self._saved.clear()

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
    directory), as their `stop()` would have: their processes (those carrying the scene's
    token), the cgroups and folder they recorded as made, each still the one made. Says one
    line for each scene and one for each thing left; returns the folders removed."""
    removed = []
    for root, owner in abandoned_scenes(folder or Path(tempfile.gettempdir())):
        stop_strays(root, owner.token)
        left = _take_down_slices(owner)
        folder_left = remove_folder(owner.folder)
        for line in [*left, folder_left]:
            if line:
                say(f"swarmdeck demo: {line}")
        if folder_left:
            continue
        removed.append(root)
        gone = [made.path for made in owner.cgroups if not os.path.lexists(made.path)]
        say(
            f"swarmdeck demo: removed what an earlier demo (pid {owner.process.pid}) left when "
            f"it ended without cleaning up: {root}"
            + (f" and slices {', '.join(gone)}" if gone else "")
        )
    return removed


def _take_down_slices(owner: SceneOwner) -> list[str]:
    """Take down the cgroups and slice units the scene recorded; the lines saying what is left
    and why."""
    root = owner.folder.path

    def belongs(pid: int) -> PinnedProcess | None:
        return scene_process(pid, root, owner.token)

    ledgers = list(owner.ledgers)
    lines = []
    for made in owner.cgroups:
        lines.append(take_down(made, ledgers, belongs))
        release_claim(made.path, ledgers)
    for unit in owner.units:
        site = next((site for site in slice_sites(unit) if site.backend == SCOPE), None)
        if site is not None and site.path is not None:
            lines.append(stop_unit(unit, site.path, ledgers, belongs))
            release_claim(site.path, ledgers)
    return [line for line in lines if line]


def _free_name(base: str, suffix: str = "") -> str:
    """`base`, or `base` and a few random letters, whose cgroup (and its peer's) the scene may
    make; SliceRefused when none of NAME_TRIES is."""
    names = [base + suffix] + [base + secrets.token_hex(3) + suffix for _ in range(NAME_TRIES)]
    problem = ""
    for name in names:
        problem = slice_refusal(name) or ""
        if not problem:
            return name
    raise SliceRefused(problem)


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
