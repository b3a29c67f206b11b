"""A peer reached over ssh as a host: copy the tree there, run it under the peer's own
`swarmdeck run`, stream its output back, fetch artifacts, remove the copy.

One asyncssh connection per host, its key always checked, on an SSH link of the host's own
(ssh_link.py: an event loop in a thread of its own), so callers stay synchronous and a signal
here interrupts a wait at once. Every remote argument is quoted with shlex.quote: labels, paths and
commands arrive there as text, never as shell. The tree travels as one tar stream over one
channel, not file by file.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import re
import shlex
import subprocess
import tarfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

import asyncssh

from swarmdeck.actions.hosts.base import Ended, Fit, Handle, Host, HostError, JobSpec
from swarmdeck.actions.hosts.peer_ledger import (
    end_peer_job,
    insert_peer_job,
    ledger_id,
    mark_peer_started,
    run_dir_name,
)
from swarmdeck.actions.hosts.peer_side import EXIT_CODE, OUTPUT, RESULT, SHELL
from swarmdeck.breaks import broken
from swarmdeck.errors import SwarmdeckError
from swarmdeck.exitcodes import ExitCode
from swarmdeck.probes.peer_cache import READ, current_reading
from swarmdeck.probes.procs import ProcessIdentity
from swarmdeck.sizes import exact_size, format_size
from swarmdeck.ssh_link import SshLink, reason_of

if TYPE_CHECKING:
    from swarmdeck.config import HostConfig
    from swarmdeck.state import StateStore

CHUNK = 1 << 16
RETRY_PAUSE = 0.5


@dataclass(frozen=True, slots=True)
class Remote:
    """One finished remote command."""

    code: int | None
    out: bytes
    err: str


def check_fetch_path(path: str) -> str:
    """A fetch path must stay inside the run directory: relative, no "..", not empty."""
    pure = PurePosixPath(path)
    if not path or pure.is_absolute() or ".." in pure.parts or str(pure) == ".":
        raise HostError(
            f"--fetch {path!r}: give a path inside the job's tree, like build/report.xml",
            ExitCode.USAGE,
        )
    return str(pure)


def tree_files(cwd: Path, untracked: bool) -> list[str]:
    """What `git ls-files` lists in `cwd` (with untracked-not-ignored files when asked)."""
    args = ["git", "-C", str(cwd), "ls-files", "-z", "--cached"]
    if untracked:
        args += ["--others", "--exclude-standard"]
    try:
        done = subprocess.run(args, capture_output=True, check=False, timeout=60)
    except FileNotFoundError:
        raise HostError("git is not installed here: a peer run copies what git tracks") from None
    if done.returncode != 0:
        why = done.stderr.decode(errors="replace").strip().splitlines()
        raise HostError(
            f"{cwd} is not a git checkout ({why[0] if why else 'git ls-files failed'}): "
            "a peer run copies the files git tracks; run it from inside the checkout"
        )
    names = [name for name in done.stdout.decode(errors="surrogateescape").split("\0") if name]
    return sorted({name for name in names if os.path.lexists(cwd / name)})


class Redactor:
    """Replaces the peer's own host name, as a whole word, in the bytes streamed back; keeps
    an unfinished line back so a name split across two chunks is still caught."""

    def __init__(self, hostname: str, shown_as: str) -> None:
        word = re.escape(hostname.encode())
        self._pattern = re.compile(rb"(?<![A-Za-z0-9_-])" + word + rb"(?![A-Za-z0-9_-])")
        self._shown = shown_as.encode()
        self._pending = b""
        self._active = bool(hostname) and not broken("no-redact")

    def feed(self, data: bytes) -> bytes:
        data = self._pending + data
        cut = data.rfind(b"\n") + 1
        if cut == 0 and len(data) < CHUNK:
            self._pending = data
            return b""
        if cut == 0:
            cut = len(data)
        self._pending = data[cut:]
        return self._redact(data[:cut])

    def flush(self) -> bytes:
        data, self._pending = self._pending, b""
        return self._redact(data)

    def _redact(self, data: bytes) -> bytes:
        return self._pattern.sub(self._shown, data) if self._active else data


class SshHost(Host):
    """A configured [[hosts]] peer. `store` is this host's state store (for the ledger row)."""

    kind = "ssh"

    def __init__(self, config: HostConfig, store: StateStore | None = None) -> None:
        self.config = config
        self.name = config.name
        self.store = store
        self._link = SshLink(f"swarmdeck-ssh-{config.name}")
        self._starters: dict[int, asyncssh.SSHClientProcess] = {}
        """Each started job's `remote-start` channel, open until that has reaped its shell."""

    # ---- plumbing ---------------------------------------------------------------------------

    async def _connection(self) -> asyncssh.SSHClientConnection:
        try:
            return await self._link.connection(self.config)
        except Exception as error:  # every failure to connect is one line and 78
            raise HostError(
                f"peer {self.name}: {reason_of(error, self.config.timeout)}"
            ) from None

    async def _run(self, command: str, stdin: bytes | None = None, timeout: float | None = None
                   ) -> Remote:
        conn = await self._connection()
        result = await asyncio.wait_for(
            conn.run(command, input=stdin, encoding=None, check=False),
            timeout if timeout is not None else self.config.timeout * 4,
        )
        out = result.stdout if isinstance(result.stdout, bytes) else b""
        err = result.stderr if isinstance(result.stderr, bytes) else b""
        return Remote(result.exit_status, out, err.decode(errors="replace").strip())

    def run(self, command: str, stdin: bytes | None = None, timeout: float | None = None
            ) -> Remote:
        """One remote shell command (already quoted), its output and exit status."""
        try:
            return self._link.call(self._run(command, stdin, timeout))
        except SwarmdeckError:
            raise
        except (asyncssh.Error, OSError, TimeoutError) as error:
            raise HostError(
                f"peer {self.name}: {reason_of(error, self.config.timeout)}"
            ) from None

    def swarmdeck_command(self, *args: str) -> str:
        """The peer's swarmdeck command (as configured: a command line of its own) with args."""
        return " ".join([self.config.swarmdeck, *(shlex.quote(arg) for arg in args)])

    def close(self) -> None:
        """Close the connection and stop the host's loop; the host cannot be used after."""
        self._link.close()

    def drop_connection(self) -> None:
        """Close the connection as a network failure would; the next call makes a new one."""
        self._link.call(self._link.abort(self.name))

    # ---- the interface ----------------------------------------------------------------------

    def fits(self, job: JobSpec, refresh_interval: float = 2.0) -> Fit:
        """From the cached reading (the probe's), never a new connection."""
        if not self.config.enabled:
            return Fit(self.name, False, False, reason="enabled = false")
        job_cap = self.job_cap()
        reading = current_reading(self.name, refresh_interval)
        if reading.state != READ:
            return Fit(self.name, False, False, reason=f"not read: {reading.reason}",
                       unread=True)
        book, host = reading.book, reading.host
        if book is None or host is None:
            return Fit(self.name, False, False, reason="its reading has no memory book")
        usable, slice_cap = book.usable, book.slice_cap
        threads = host.cores.threads_free
        gpus_free = reading.gpus_free if job.gpu else None
        no_gpu = reading.no_gpu if job.gpu else None
        if no_gpu is not None:
            return Fit(self.name, False, False, room=usable, cores_free=threads, gpus_free=0,
                       reason=f"no GPU card there ({no_gpu})")
        ever = job.booking <= slice_cap and (job_cap is None or job.cap <= job_cap)
        now = ever and job.booking <= usable and (not job.gpu or bool(gpus_free))
        if not ever:
            limit = slice_cap if job.booking > slice_cap else job_cap or 0
            reason = f"books {format_size(job.booking)}, the most it takes is {format_size(limit)}"
        elif job.gpu and gpus_free is None:
            reason = "no GPU figures from it"
        elif job.gpu and not gpus_free:
            reason = "every GPU there has a foreign process on it"
        elif not now:
            reason = f"needs {format_size(job.booking)}, room {format_size(max(0, usable))}"
        else:
            reason = ""
        return Fit(self.name, now, ever, room=usable, cores_free=threads, gpus_free=gpus_free,
                   reason=reason)

    def job_cap(self) -> int | None:
        """The configured cap for one job there, in bytes (a percentage is of its MemTotal)."""
        spec = self.config.job_cap
        if spec is None:
            return None
        book = current_reading(self.name, 1e9).book
        return spec.resolve(book.mem_total if book is not None else 0)

    def submit(self, job: JobSpec) -> Handle:
        if self.store is None:
            raise HostError("submit needs this host's state store for the ledger row")
        files = tree_files(job.cwd, job.untracked)
        job_id = insert_peer_job(self.store, self.name, job)
        try:
            return self._start(job, files, job_id)
        except BaseException as error:
            why = error.message if isinstance(error, SwarmdeckError) else type(error).__name__
            end_peer_job(self.store, job_id, int(ExitCode.REFUSED), f"not started: {why}")
            raise

    def _start(self, job: JobSpec, files: list[str], job_id: int) -> Handle:
        assert self.store is not None
        name = run_dir_name(job.label, job_id, ledger_id(self.store))
        hostname = self.run("uname -n").out.decode(errors="replace").strip()
        run_dir = self._copy(job.cwd, files, name)
        args = ["peer", "remote-start"]
        if job.fingerprint:
            args += ["--workload", job.fingerprint]
        args += [run_dir, "--", "--label", job.label]
        if job.cap:
            args += ["--cap", exact_size(job.cap)]
        if job.threads:
            args += ["--threads", str(job.threads)]
        starting = self.swarmdeck_command(*args, "--", *job.argv)
        command = f"cd -- {shlex.quote(run_dir)} && {starting}"
        try:
            started, starter = self._link.call(self._begin(command))
        except (asyncssh.Error, OSError, TimeoutError) as error:
            self.clean(Handle(self.name, job_id, "", run_dir))
            raise HostError(
                f"peer {self.name} did not start the job: {reason_of(error, self.config.timeout)}"
            ) from None
        try:
            answer = json.loads(started.out.decode())
            remote = ProcessIdentity(int(answer["pid"]), int(answer["start_ticks"]))
        except (ValueError, KeyError, TypeError):
            if starter is not None:
                starter.close()
            self.clean(Handle(self.name, job_id, "", run_dir))
            why = started.err.splitlines()[-1] if started.err else f"exit {started.code}"
            raise HostError(f"peer {self.name} did not start the job: {why}") from None
        mark_peer_started(self.store, job_id, remote, run_dir)
        if starter is not None:
            self._starters[job_id] = starter
        return Handle(
            self.name, job_id, f"{remote.pid}:{remote.start_ticks}", run_dir,
            {"hostname": hostname},
        )

    async def _begin(self, command: str) -> tuple[Remote, asyncssh.SSHClientProcess | None]:
        """Run `remote-start`: its first line names the job's shell, and its channel stays
        open while it waits there to reap that shell; a start that failed ends at once."""
        conn = await self._connection()
        process = await conn.create_process(command, encoding=None)
        limit = self.config.timeout * 4
        line = await asyncio.wait_for(process.stdout.readline(), limit)
        if line.strip():
            return Remote(0, line, ""), process
        result = await asyncio.wait_for(process.wait(), limit)
        err = result.stderr if isinstance(result.stderr, bytes) else b""
        return Remote(result.exit_status, b"", err.decode(errors="replace").strip()), None

    def _settle(self, job_id: int) -> None:
        """Wait (briefly) for `remote-start` to have reaped the job's ended shell there."""
        starter = self._starters.pop(job_id, None)
        if starter is None:
            return

        async def settle() -> None:
            with contextlib.suppress(asyncssh.Error, OSError, TimeoutError):
                await asyncio.wait_for(starter.wait_closed(), self.config.timeout)

        self._link.call(settle())

    def _copy(self, cwd: Path, files: list[str], name: str) -> str:
        """Stream the files as one tar into RUNROOT/NAME; returns that folder's real path.

        A copy that fails halfway (the stream cut, the disk full there) removes what it wrote
        and reads back that it is gone before it says so."""
        root = shlex.quote(self.config.run_root)
        command = (
            f"mkdir -p -- {root} && cd -- {root} && mkdir -- {shlex.quote(name)} && "
            f"cd -- {shlex.quote(name)} && tar -xf - && pwd -P"
        )
        try:
            done = self._link.call(self._stream_tar(command, cwd, files))
        except SwarmdeckError:
            self._remove_partial(name)
            raise
        except (asyncssh.Error, OSError, TimeoutError) as error:
            self._link.forget(self.name)
            why = reason_of(error, self.config.timeout)
            raise HostError(
                f"peer {self.name}: copy failed: {why}{self._remove_partial(name)}"
            ) from None
        if done.code != 0:
            if done.code is None:  # the channel closed without a status: the connection went
                self._link.forget(self.name)
            why = done.err or ("connection lost" if done.code is None else f"exit {done.code}")
            raise HostError(f"peer {self.name}: copy failed: {why}{self._remove_partial(name)}")
        return done.out.decode().strip()

    def _remove_partial(self, name: str) -> str:
        """Remove RUNROOT/NAME after a failed copy; "" once it is gone, else what is left."""
        root, folder = shlex.quote(self.config.run_root), shlex.quote(name)
        try:
            done = self.run(
                f"cd -- {root} 2>/dev/null || {{ echo gone; exit 0; }}; rm -rf -- {folder}; "
                f"if [ -e {folder} ]; then echo left; else echo gone; fi", timeout=300)
        except HostError:
            done = Remote(None, b"", "")
        if done.out.decode().strip() == "gone":
            return ""
        return (f"; its partial copy {self.config.run_root}/{name} may be left: "
                f"`swarmdeck peer cleanup {self.name}` removes it")

    def run_root_entries(self) -> list[str]:
        """The folder names directly under the host's run root (none when it is absent)."""
        root = shlex.quote(self.config.run_root)
        done = self.run(f"cd -- {root} 2>/dev/null || exit 0; for d in *; do "
                        "if [ -d \"$d\" ] && [ ! -L \"$d\" ]; then printf '%s\\0' \"$d\"; fi; done")
        if done.code != 0:
            raise HostError(f"peer {self.name}: could not list its run root: {done.err}")
        return [name for name in done.out.decode(errors="surrogateescape").split("\0") if name]

    def run_root_path(self, name: str) -> str:
        """RUNROOT/NAME as a path the peer's shell takes (relative = under the ssh user's home)."""
        return str(PurePosixPath(self.config.run_root) / name)

    async def _stream_tar(self, command: str, cwd: Path, files: list[str]) -> Remote:
        conn = await self._connection()
        process = await conn.create_process(command, encoding=None)
        sink = _Sink()
        with tarfile.open(fileobj=sink, mode="w|", format=tarfile.PAX_FORMAT) as tar:
            for name in files:
                tar.add(str(cwd / name), arcname=name, recursive=False)
                if sink.size >= CHUNK:
                    process.stdin.write(sink.take())
                    await process.stdin.drain()
        process.stdin.write(sink.take())
        process.stdin.write_eof()
        result = await process.wait()
        out = result.stdout if isinstance(result.stdout, bytes) else b""
        err = result.stderr if isinstance(result.stderr, bytes) else b""
        return Remote(result.exit_status, out, err.decode(errors="replace").strip())

    def follow(self, handle: Handle, out: Callable[[bytes], None]) -> Ended:
        redactor = Redactor(handle.extra.get("hostname", ""), f"<{self.name}>")
        received = 0

        def passed_on(data: bytes) -> None:
            # Counted as it is passed on: a stream that breaks after some output has passed
            # that output on, and the next one must start after it.
            nonlocal received
            received += len(data)
            out(redactor.feed(data))

        output = shlex.quote(f"{handle.run_dir}/{OUTPUT}")
        rc = shlex.quote(f"{handle.run_dir}/{EXIT_CODE}")
        # tail follows the file until the exit-code file appears or the shell is gone (a
        # zombie counts as gone: nothing may be left to reap it); tail is waited for there, so
        # it is not left a zombie. Only once the job is seen to have ended does a last plain
        # read take whatever tail had not passed on yet, counted exactly by the bytes
        # received: a follow that ended early (its connection dropped) comes round again, as
        # a read before the end was seen would miss what the job wrote after it.
        until_ended = (
            f"while [ ! -f {rc} ] && {_alive_test(handle)}; do sleep 0.2; done; kill $t; wait $t"
        )
        deadline: float | None = None
        while True:
            try:
                self._link.call(self._stream(
                    f"tail -c +{received + 1} -f -- {output} & t=$!; {until_ended}", passed_on
                ))
                ended = self._ended(handle)
                if ended is not None:
                    self._link.call(self._stream(f"tail -c +{received + 1} -- {output}", passed_on))
            except HostError:
                deadline = deadline or time.monotonic() + self.config.reconnect_for
                if time.monotonic() >= deadline:
                    raise HostError(
                        f"peer {self.name}: connection lost for over "
                        f"{self.config.reconnect_for:g} s; the job may still run there: "
                        f"`swarmdeck peer cleanup {self.name}` stops it and removes its copy"
                    ) from None
                time.sleep(RETRY_PAUSE)
                continue
            deadline = None
            if ended is not None:
                out(redactor.flush())
                self._settle(handle.job_id)
                return ended

    async def _stream(self, command: str, out: Callable[[bytes], None]) -> None:
        """Run `command`, passing its stdout on as it comes. A channel that closed without an
        exit status lost its connection (the peer closed it): its output may be cut short."""
        try:
            conn = await self._connection()
            process = await conn.create_process(command, encoding=None)
            while True:
                data = await process.stdout.read(CHUNK)
                if not data:
                    break
                out(data)
            done = await process.wait()
        except (asyncssh.Error, OSError) as error:
            self._link.forget(self.name)
            raise HostError(f"peer {self.name}: {reason_of(error, self.config.timeout)}") from None
        if done.exit_status is None and done.exit_signal is None:
            self._link.forget(self.name)
            raise HostError(f"peer {self.name}: connection lost")

    def _ended(self, handle: Handle) -> Ended | None:
        """The exit code once the job's shell ended; None while it runs."""
        rc = shlex.quote(f"{handle.run_dir}/{EXIT_CODE}")
        result = shlex.quote(f"{handle.run_dir}/{RESULT}")
        done = self.run(f"if [ -f {rc} ]; then cat {rc}; cat {result} 2>/dev/null; elif "
                        f"{_alive_test(handle)}; then echo running; else echo vanished; fi")
        if done.code is None:
            raise HostError(f"peer {self.name}: connection lost")
        word, _, learned = done.out.decode(errors="replace").strip().partition("\n")
        if word == "running":
            return None
        if word == "vanished":
            return Ended(int(ExitCode.LOST), "lost: its runner on the peer vanished")
        code = int(word) if word.isdigit() else int(ExitCode.LOST)
        return ended_with_result(code, learned)

    def stop(self, handle: Handle, signum: int) -> None:
        pid, ticks = handle.remote_id.split(":")
        done = self.run(self.swarmdeck_command("peer", "remote-stop", pid, ticks, str(signum)),
                        timeout=60)
        if done.code != 0:
            raise HostError(f"peer {self.name}: could not stop job {handle.job_id}: {done.err}")
        self._settle(handle.job_id)

    def fetch(self, handle: Handle, paths: tuple[str, ...], into: Path) -> list[Path]:
        wanted = [check_fetch_path(path) for path in paths]
        if not wanted:
            return []
        quoted = " ".join(shlex.quote(path) for path in wanted)
        listing = self.run(
            f"cd -- {shlex.quote(handle.run_dir)} && for p in {quoted}; do "
            "if [ -e \"$p\" ] || [ -L \"$p\" ]; then printf '%s\\0' \"$p\"; fi; done"
        )
        present = [name for name in listing.out.decode().split("\0") if name]
        for missing in sorted(set(wanted) - set(present)):
            print(f"swarmdeck: job {handle.job_id}: {missing} was not written on "
                  f"{self.name}; nothing fetched for it", flush=True)
        if not present:
            return []
        names = " ".join(shlex.quote(path) for path in present)
        packed = self.run(f"cd -- {shlex.quote(handle.run_dir)} && tar -cf - -- {names}",
                          timeout=600)
        if packed.code != 0:
            raise HostError(f"peer {self.name}: fetch failed: {packed.err}")
        into.mkdir(parents=True, exist_ok=True)
        with tarfile.open(fileobj=io.BytesIO(packed.out), mode="r:") as tar:
            tar.extractall(into, filter="data")
        return [into / path for path in present]

    def clean_unused(self, handle: Handle) -> bool:
        """Remove the run directory unless the job's shell recorded in it (pid and start ticks,
        written there as it started) still runs there; False, and nothing removed, when it does.
        HostError when it is still there after the removal."""
        if not handle.run_dir:
            return True
        shell = shlex.quote(f"{handle.run_dir}/{SHELL}")
        done = self.run(
            f"if [ -f {shell} ] && read p t < {shell} && case $p$t in ''|*[!0-9]*) false;; "
            f"esac && {_alive_shell_test('$p', '$t')}; then echo used; exit 0; fi; "
            + self._removal(handle.run_dir), timeout=300)
        if done.out.decode().strip() == "used":
            return False
        self._removed_or_raise(handle, done)
        return True

    def clean(self, handle: Handle) -> None:
        if not handle.run_dir:
            return
        self._removed_or_raise(handle, self.run(self._removal(handle.run_dir), timeout=300))

    @staticmethod
    def _removal(run_dir: str) -> str:
        where = shlex.quote(run_dir)
        return f"rm -rf -- {where}; if [ -e {where} ]; then echo left; else echo gone; fi"

    def _removed_or_raise(self, handle: Handle, done: Remote) -> None:
        if done.out.decode().strip() != "gone":
            raise HostError(
                f"peer {self.name}: run directory {handle.run_dir} is still there "
                f"({done.err or 'rm failed'}); remove it by hand"
            )


class _Sink(io.RawIOBase):
    """Where tarfile writes; the bytes are taken out and sent between files."""

    def __init__(self) -> None:
        self._parts: list[bytes] = []
        self.size = 0

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        chunk = bytes(data)
        self._parts.append(chunk)
        self.size += len(chunk)
        return len(chunk)

    def take(self) -> bytes:
        data = b"".join(self._parts)
        self._parts, self.size = [], 0
        return data


def ended_with_result(code: int, text: str) -> Ended:
    """The peer's exit code with the peak its runner left (peer_side.RESULT); a result that
    is missing or unreadable (the runner never ran the job) is an ending without a peak."""
    outcome = "ok" if code == 0 else f"exit {code}"
    try:
        found = json.loads(text) if text.strip() else {}
    except ValueError:
        found = {}
    peak = found.get("peak") if isinstance(found, dict) else None
    if not isinstance(peak, int) or isinstance(peak, bool) or peak < 0:
        return Ended(code, outcome)
    cap, duration = found.get("cap"), found.get("duration")
    return Ended(
        code, outcome, peak=peak,
        cap=cap if isinstance(cap, int) and not isinstance(cap, bool) else None,
        hit_ceiling=found.get("hit_ceiling") is True,
        duration=float(duration) if isinstance(duration, (int, float)) else None,
    )


def _alive_test(handle: Handle) -> str:
    """A shell test, true while the job's shell (pid + start ticks) lives and is no zombie."""
    pid, ticks = (int(part) for part in handle.remote_id.split(":"))
    return _alive_shell_test(str(pid), str(ticks))


def _alive_shell_test(pid: str, ticks: str) -> str:
    """A shell test, true while the process `pid` (a number, or a shell variable holding one)
    with start ticks `ticks` lives and is no zombie."""
    return (
        f"{{ s=$(cat /proc/{pid}/stat 2>/dev/null) && s=${{s##*) }} && set -- $s && "
        f'[ "$1" != Z ] && [ "${{20}}" = "{ticks}" ]; }}'
    )

