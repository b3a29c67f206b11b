"""`swarmdeck peer run|check|cleanup`: run a job on a configured peer with its results back here
and nothing left behind there.

A peer run refuses (78, nothing ran) an unknown or disabled host and never falls back to
running here; checks the cap against the host's cap for one job; compares the toolchains line
by line; then submits through actions/hosts/ssh.py, follows, fetches the named artifacts,
removes the run directory and exits with the remote exit code (250–254 as they are). TERM, INT
or HUP here stop the remote tree, fetch what was written, remove the copy and exit 128 + the
signal. Every step is recorded in this host's ledger under the peer's name.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from swarmdeck import __version__
from swarmdeck.actions.detach import Detached, detached_channel
from swarmdeck.actions.fingerprint import fingerprint
from swarmdeck.actions.hosts.base import Ended, Handle, Host, HostError, JobSpec
from swarmdeck.actions.hosts.peer_ledger import (
    abandoned_run_dirs,
    active_peer_rows,
    end_peer_job,
    mark_peer_lost,
    set_driver,
)
from swarmdeck.actions.run_request import checked_cap, checked_threads
from swarmdeck.actions.spawn import STOP_SIGNALS
from swarmdeck.breaks import broken
from swarmdeck.errors import RefusedError, UsageError
from swarmdeck.exitcodes import ExitCode
from swarmdeck.probes.procs import own_identity
from swarmdeck.sizes import SizeSpec, format_size

if TYPE_CHECKING:
    from swarmdeck.actions.hosts.ssh import SshHost
    from swarmdeck.config import Config, HostConfig
    from swarmdeck.state import StateStore

TOOLCHAIN_TIMEOUT = 30.0
SNAPSHOT_HOST_KEYS = ("room", "machine_room", "slice_cap", "mem_total", "slice_backend")
"""Keys of a peer's host object that dispatch and peer run read; a peer without them speaks
another snapshot format."""


@dataclass(frozen=True)
class PeerRunRequest:
    """What `swarmdeck peer run` was asked to do."""

    host: str
    argv: list[str]
    cap: str | None = None
    label: str | None = None
    fetch: tuple[str, ...] = ()
    detach: bool = False
    untracked: bool = False
    accept_toolchain: bool = False
    threads: int | None = None
    cwd: Path = field(default_factory=Path.cwd)


def say(line: str) -> None:
    print(f"swarmdeck: {line}", file=sys.stderr, flush=True)


def peer_config(config: Config, name: str) -> HostConfig:
    """The host's entry, or 78: an unknown or disabled host never runs anything, anywhere."""
    host = config.host(name)
    where = str(config.path) if config.path else "the config file"
    if host is None:
        known = ", ".join(h.name for h in config.hosts) or "none"
        raise RefusedError(
            f"no [[hosts]] entry named {name!r} in {where} (configured: {known}); nothing ran"
        )
    if not host.enabled:
        raise RefusedError(
            f"peer {name} is disabled (enabled = false in {where}); nothing ran, here or there"
        )
    return host


def open_host(config: HostConfig, store: StateStore | None) -> SshHost:
    # Here, not at the top: asyncssh is imported only by commands that talk to a peer.
    from swarmdeck.actions.hosts.ssh import SshHost

    return SshHost(config, store)


# ---- toolchains ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Toolchain:
    """One toolchain command's first output line here and there."""

    command: str
    here: str
    there: str

    @property
    def same(self) -> bool:
        return self.here == self.there


def _first_line(out: bytes | str) -> str:
    text = out.decode(errors="replace") if isinstance(out, bytes) else out
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[0] if lines else "(no output)"


def local_toolchain(command: str) -> str:
    try:
        done = subprocess.run(
            command, shell=True, capture_output=True, timeout=TOOLCHAIN_TIMEOUT, check=False
        )
    except subprocess.TimeoutExpired:
        return "(timed out)"
    text = _first_line(done.stdout + done.stderr)
    return text if done.returncode == 0 else f"(exit {done.returncode}) {text}"


def compare_toolchains(host: SshHost) -> list[Toolchain]:
    """Each configured command's first line here and on the peer, side by side."""
    rows = []
    for command in host.config.toolchains:
        remote = host.run(command, timeout=TOOLCHAIN_TIMEOUT)
        there = _first_line(remote.out + remote.err.encode())
        if remote.code != 0:
            there = f"(exit {remote.code}) {there}"
        rows.append(Toolchain(command, local_toolchain(command), there))
    return rows


def toolchain_lines(rows: list[Toolchain], name: str) -> list[str]:
    width = max([len(row.command) for row in rows] + [9])
    lines = [f"  {'toolchain':<{width}}  {'here':<30}  {name}"]
    for row in rows:
        mark = "" if row.same else "   <- differs"
        lines.append(f"  {row.command:<{width}}  {row.here:<30}  {row.there}{mark}")
    return lines


# ---- peer check ------------------------------------------------------------------------------


@dataclass
class CheckReport:
    """What `peer check` found; usable when `problem` is empty."""

    lines: list[str] = field(default_factory=list)
    problem: str = ""


def check_peer(config: Config, name: str) -> CheckReport:
    """Reachability, host key, version and snapshot format, cage backend, toolchains."""
    import json

    host_config = peer_config(config, name)
    report = CheckReport()
    host = open_host(host_config, None)
    try:
        address = f"{host_config.address}:{host_config.port}"
        try:
            host.run("true")
        except HostError as error:
            report.problem = error.message
            return report
        report.lines.append(f"  reachable     {address}, host key verified")
        version = host.run(host.swarmdeck_command("--version"))
        there = _first_line(version.out).removeprefix("swarmdeck ").strip()
        if version.code != 0:
            report.problem = f"peer {name}: its swarmdeck does not run ({version.err or 'exit'})"
            return report
        same = "same" if there == __version__ else "differs"
        report.lines.append(f"  swarmdeck     here {__version__}, there {there} ({same})")
        probe = host.run(host.swarmdeck_command("probe", "--json"), timeout=host_config.timeout * 4)
        try:
            snapshot = json.loads(probe.out)
            figures = snapshot["hosts"][0]
        except (ValueError, KeyError, IndexError, TypeError):
            report.problem = f"peer {name}: `probe --json` gave no snapshot ({probe.err or 'bad'})"
            return report
        from swarmdeck.snapshot import SNAPSHOT_KEYS

        missing = [key for key in SNAPSHOT_KEYS if key not in snapshot]
        missing += [key for key in SNAPSHOT_HOST_KEYS if key not in figures]
        if missing:
            report.problem = (
                f"peer {name} speaks another snapshot format (swarmdeck {there}; missing "
                f"{', '.join(missing)}): install swarmdeck {__version__} there"
            )
            return report
        report.lines.append("  snapshot      same format")
        backend = figures.get("slice_backend") or ""
        if not backend:
            report.problem = (
                f"peer {name} cannot cage jobs: {figures.get('slice_problem') or 'no backend'}"
            )
            return report
        report.lines.append(
            f"  cage          {backend} at {figures.get('slice_path')}, slice "
            f"{format_size(int(figures['slice_cap']))}, room {format_size(int(figures['room']))}"
        )
        rows = compare_toolchains(host)
        report.lines += toolchain_lines(rows, name)
        differing = [row.command for row in rows if not row.same]
        if differing:
            report.problem = (
                f"peer {name}: toolchains differ ({'; '.join(differing)}); a peer run refuses "
                "unless given --accept-toolchain"
            )
        return report
    finally:
        host.close()


# ---- peer run --------------------------------------------------------------------------------


class _Stop(BaseException):
    """Raised in the main thread by a stop signal once the remote job has started."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


class StopSignals:
    """TERM/INT/HUP are held back while the job is being started, then raised as _Stop."""

    def __init__(self) -> None:
        self.pending: int | None = None
        self.armed = False
        self._old: dict[int, Any] = {}

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.pending is None:
            self.pending = signum
        if self.armed:
            self.armed = False
            raise _Stop(signum)

    def install(self) -> None:
        for signum in STOP_SIGNALS:
            self._old[signum] = signal.signal(signum, self._handle)

    def arm(self) -> None:
        """From now on a signal interrupts at once; one that came meanwhile does so now."""
        if self.pending is not None:
            raise _Stop(self.pending)
        self.armed = True

    def disarm(self) -> None:
        self.armed = False

    def restore(self) -> None:
        for signum, old in self._old.items():
            signal.signal(signum, old)


def resolve_cap(text: str | None, host: SshHost) -> int:
    """--cap in bytes (a percentage is of the peer's MemTotal, from its cached reading);
    0 when not given (the peer's runner decides). Over the host's cap for one job is 78."""
    if text is None:
        return 0
    spec = SizeSpec.parse(text)
    from swarmdeck.probes.peer_cache import current_reading

    book = current_reading(host.name, 1e9).book
    total = book.mem_total if book is not None else 0
    if spec.percent is not None and total <= 0:
        raise RefusedError(
            f"--cap {text} is a share of {host.name}'s memory, which was never read: give a size"
        )
    cap = checked_cap(text, spec.resolve(total))
    limit = host.job_cap()
    if limit is not None and cap > limit:
        raise RefusedError(
            f"--cap {format_size(cap)} is over {host.name}'s cap for one job "
            f"({format_size(limit)}, job_cap in the config); nothing ran"
        )
    return cap


def job_spec(request: PeerRunRequest, cap: int) -> JobSpec:
    """The request as every host takes it; without --cap the peer's runner books it."""
    label = request.label or " ".join([Path(request.argv[0]).name, *request.argv[1:]])[:60]
    return JobSpec(
        argv=tuple(request.argv), cwd=request.cwd, label=label, booking=cap, cap=cap,
        threads=request.threads, fetch=request.fetch, untracked=request.untracked,
        fingerprint=fingerprint(request.argv, request.cwd), declared_cap=request.cap or "",
    )


def peer_run(config: Config, store: StateStore, request: PeerRunRequest) -> int:
    """Run the request on its peer; returns the exit code of the contract."""
    if not request.argv or not request.argv[0]:
        raise UsageError(
            "peer run: no command given: put it after --, like: swarmdeck peer run box2 -- make"
        )
    checked_threads(request.threads)
    try:
        host_config = peer_config(config, request.host)
    except RefusedError:
        if broken("no-peer-switch"):
            return subprocess.run(request.argv, cwd=request.cwd, check=False).returncode
        raise
    from swarmdeck.actions.hosts.ssh import check_fetch_path

    for path in request.fetch:
        check_fetch_path(path)
    if request.detach:
        return launch_detached_peer_run(request)
    detached = detached_channel()
    host = open_host(host_config, store)
    try:
        cap = resolve_cap(request.cap, host)
        rows = compare_toolchains(host)
        if not all(row.same for row in rows):
            for line in toolchain_lines(rows, host.name):
                say(line)
            if not request.accept_toolchain:
                raise RefusedError(
                    f"toolchains differ on {host.name}; nothing ran (--accept-toolchain runs it "
                    "anyway)"
                )
        job = job_spec(request, cap)
        return drive(host, job, store, detached)
    finally:
        host.close()


def drive(
    host: Host,
    job: JobSpec,
    store: StateStore,
    detached: Detached | None = None,
    out: Callable[[bytes], None] | None = None,
    on_submit: Callable[[int], None] | None = None,
) -> int:
    """Submit `job` to `host`, follow it, fetch, clean up, record; the contract's exit code.

    A job run in place (this host) is recorded by its own runner; a job run on a peer is
    recorded here, in the row its submit made.
    """
    signals = StopSignals()
    signals.install()
    try:
        handle = host.submit(job)
        say(f"job {handle.job_id} runs on {host.name}" + (
            f" in {handle.run_dir}" if handle.run_dir else ""))
        if on_submit is not None:
            on_submit(handle.job_id)
        if detached is not None:
            output = detached.admitted(handle.job_id)
            set_driver(store, handle.job_id, own_identity(), output)
        return see_through(host, handle, job.fetch, job.cwd, store, signals, out or _stdout)
    finally:
        signals.restore()


def see_through(
    host: Host,
    handle: Handle,
    fetch: tuple[str, ...],
    into: Path,
    store: StateStore,
    signals: StopSignals,
    write: Callable[[bytes], None],
) -> int:
    """Follow a started job to its end (or stop it on a signal), fetch, clean, record.

    When the peer cannot be reached again, or the stop fails, the row stays active: once this
    driver has gone, `peer cleanup` or `peer attach` finds it.
    """
    records = host.kind != "local"
    learned: Ended | None = None
    try:
        signals.arm()
        ended = host.follow(handle, write)
        signals.disarm()
        code, outcome, learned = ended.exit_code, ended.outcome, ended
    except _Stop as stop:
        signals.disarm()
        name = signal.Signals(stop.signum).name
        say(f"got {name}: stopping job {handle.job_id} on {host.name}")
        code, outcome = 128 + stop.signum, f"stopped: driver got {name}"
        try:
            host.stop(handle, stop.signum)
        except HostError as error:
            say(f"{error.message}; its copy stays there: `swarmdeck peer cleanup "
                f"{host.name}` stops it and removes it")
            return code
    except HostError as lost:
        signals.disarm()
        say(lost.message)
        return int(ExitCode.LOST)  # the peer was not reached again for `reconnect_for` s
    try:
        for path in host.fetch(handle, fetch, into):
            say(f"fetched {path}")
    except HostError as error:
        say(error.message)
    try:
        host.clean(handle)
    except HostError as error:
        say(error.message)
    if records:
        end_peer_job(store, handle.job_id, code, outcome, learned)
    if code in (ExitCode.OWN_CAP, ExitCode.SLICE_FULL, ExitCode.TIMED_OUT):
        say(f"job {handle.job_id} on {host.name} ended with {code} ({outcome})")
    return code


def attach_peer(
    config: Config, store: StateStore, name: str, job_id: int, fetch: tuple[str, ...]
) -> int:
    """Follow a peer run whose driver died, as its new driver, to the same end a driver has."""
    host_config = peer_config(config, name)
    from swarmdeck.actions.hosts.ssh import check_fetch_path

    for path in fetch:
        check_fetch_path(path)
    row = next((row for row in active_peer_rows(store, name) if row.id == job_id), None)
    if row is None or row.remote is None:
        raise RefusedError(f"no running job {job_id} on {name} in the ledger; nothing to attach")
    if row.driver_alive:
        raise RefusedError(f"job {job_id} on {name} is still followed by its driver")
    host = open_host(host_config, store)
    signals = StopSignals()
    signals.install()
    try:
        hostname = host.run("uname -n").out.decode(errors="replace").strip()
        handle = Handle(name, job_id, f"{row.remote.pid}:{row.remote.start_ticks}",
                        row.run_dir, {"hostname": hostname})
        set_driver(store, job_id, own_identity(), None)
        say(f"following job {job_id} on {name} again")
        return see_through(host, handle, fetch, row.cwd, store, signals, _stdout)
    finally:
        signals.restore()
        host.close()


def _stdout(data: bytes) -> None:
    if data:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()


def relaunch_argv(request: PeerRunRequest) -> list[str]:
    """The `swarmdeck peer run` line that repeats the request in a driver of its own."""
    args = [sys.executable, "-m", "swarmdeck.cli", "peer", "run", request.host]
    if request.cap is not None:
        args += ["--cap", request.cap]
    if request.label is not None:
        args += ["--label", request.label]
    if request.threads is not None:
        args += ["--threads", str(request.threads)]
    for path in request.fetch:
        args += ["--fetch", path]
    if request.untracked:
        args.append("--untracked")
    if request.accept_toolchain:
        args.append("--accept-toolchain")
    return [*args, "--", *request.argv]


def launch_detached_peer_run(request: PeerRunRequest) -> int:
    """A driver in its own session follows the job; this returns once the job started."""
    from swarmdeck.actions.detach import launch_and_wait_admitted

    return launch_and_wait_admitted(relaunch_argv(request), request.cwd, f" on {request.host}")


# ---- peer cleanup ----------------------------------------------------------------------------


def cleanup_peer(config: Config, store: StateStore, name: str) -> list[str]:
    """Stop and remove every run on `name` whose driver here died, and remove every copy under
    its run root that this ledger gave out and nothing uses (a copy that failed, or whose
    driver died before the job started); one line per run. Only this ledger's copies are
    named (peer_ledger.run_dir_name), and a copy whose job's shell still runs there is left."""
    host_config = peer_config(config, name)
    orphans = [row for row in active_peer_rows(store, name) if not row.driver_alive]
    host = open_host(host_config, store)
    lines = []
    try:
        for row in orphans:
            remote = row.remote
            handle = Handle(
                name, row.id, f"{remote.pid}:{remote.start_ticks}" if remote else "", row.run_dir
            )
            if remote is not None:
                host.stop(handle, signal.SIGTERM)
            if not host.clean_unused(handle):
                lines.append(_in_use(row.id, row.run_dir, name))
                continue
            mark_peer_lost(store, row.id, "cleaned: its driver died")
            where = f"{row.run_dir} removed" if row.run_dir else "it had not started"
            lines.append(f"job {row.id} ({row.label}): stopped on {name}, {where}")
        abandoned = abandoned_run_dirs(store, name)
        for folder in host.run_root_entries():
            job_id = abandoned.get(folder)
            if job_id is None:
                continue
            path = host.run_root_path(folder)
            if not host.clean_unused(Handle(name, job_id, "", path)):
                lines.append(_in_use(job_id, path, name))
                continue
            lines.append(f"job {job_id}: its copy {path} on {name} was never started; removed")
    finally:
        host.close()
    return lines or [f"no runs on {name} without their driver"]


def _in_use(job_id: int, path: str, host: str) -> str:
    return (f"job {job_id}: its copy {path} on {host} is in use by a live run there; left as"
            " it is")
