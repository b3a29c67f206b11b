"""Before `swarmdeck run` books anything: refuse (78, nothing ran) what cannot or need not run.

Conditions fail early instead of late: `--needs CMD…` (tools on PATH), `--needs-gpu` (a card
NVML can read), `--single` (no other live run of the same label). Inputs make a rerun with
nothing new a no-op: when the last run of the same fingerprint (`inputs_fingerprint`) ended
ok, the run is refused as unchanged unless `--force`. `--single` is checked before admission,
not inside it: it keeps a person from starting a second run by mistake, not a race.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from swarmdeck.durations import age_text
from swarmdeck.errors import RefusedError
from swarmdeck.ledger import last_input_run, live_rows_labelled, newest_job_of_runner
from swarmdeck.probes.machine import local_host_name
from swarmdeck.probes.procs import ProcessIdentity, own_identity

if TYPE_CHECKING:
    from swarmdeck.state import StateStore

INPUTS_GIT_TIMEOUT = 60.0
"""Seconds for each git call that reads `--inputs` (ls-files, diff over their paths): a large
tree takes long to read, and the answer decides whether the run is refused as unchanged."""


@dataclass(frozen=True)
class Conditions:
    """What a run asked to hold before it starts."""

    inputs: tuple[str, ...] = ()
    force: bool = False
    needs: tuple[str, ...] = ()
    single: bool = False
    needs_gpu: bool = False


def check(
    store: StateStore, conditions: Conditions, argv: list[str], cwd: str, label: str
) -> str | None:
    """Raise RefusedError (78) for the first unmet condition or unchanged inputs; else the
    inputs' fingerprint to `record` once the run ended (None when no inputs were named)."""
    for tool in conditions.needs:
        if shutil.which(tool) is None:
            raise RefusedError(
                f"needs {tool}, which is not on PATH; nothing ran: install it, or drop"
                f" --needs {tool}"
            )
    if conditions.needs_gpu:
        _need_gpu()
    if conditions.single:
        _need_single(store, label)
    if not conditions.inputs:
        return None
    fingerprint = inputs_fingerprint(conditions.inputs, argv, cwd)
    if not conditions.force:
        last = last_run(store, fingerprint)
        if last is not None and last[1] == 0:
            job_id, _, ended_at = last
            ago = age_text(time.time() - ended_at) if ended_at else "some time"
            raise RefusedError(
                f"unchanged since job {job_id} (ok, {ago} ago): nothing to do; --force runs it"
                " anyway"
            )
    return fingerprint


def _need_gpu() -> None:
    from swarmdeck.probes.gpu import READY, gpu_snapshot

    snapshot = gpu_snapshot()
    if snapshot.state != READY or not snapshot.cards:
        raise RefusedError(
            f"needs a GPU, and none can be read here ({snapshot.summary()}); nothing ran: run"
            " it on a host with one, or drop --needs-gpu"
        )


def _need_single(store: StateStore, label: str) -> None:
    with store.read() as conn:
        rows = live_rows_labelled(conn, label, local_host_name())
    for row in rows:
        runner = ProcessIdentity(row["runner_pid"] or 0, row["runner_start_ticks"] or 0)
        if runner.is_alive():
            raise RefusedError(
                f"another run labelled {label!r} is live (job {row['id']}, runner pid"
                f" {runner.pid}); nothing ran: wait for it to end, or drop --single"
            )


def last_run(store: StateStore, fingerprint: str) -> tuple[int, int | None, float | None] | None:
    """(job id, exit code, ended at) of the newest ended run with this inputs' fingerprint."""
    with store.read() as conn:
        return last_input_run(conn, fingerprint)


def record(store: StateStore, fingerprint: str) -> None:
    """Remember that the job this runner just ran had these inputs (nothing when it made no
    row: refused before admission)."""
    me = own_identity()
    with store.transaction() as conn:
        job_id = newest_job_of_runner(conn, me.pid, me.start_ticks)
        if job_id is not None:
            conn.execute(
                "INSERT INTO input_runs (fingerprint, job_id, recorded_at) VALUES (?, ?, ?)",
                (fingerprint, job_id, time.time()),
            )


# ---- the fingerprint ------------------------------------------------------------------------


def inputs_fingerprint(inputs: tuple[str, ...], argv: list[str], cwd: str) -> str:
    """One hash of the command, its folder, and each input's state now.

    The inputs are `--inputs PATH…` (or a script's `# swarmdeck: inputs …` header) and the
    named `$VARIABLES`; a file's state is git's view where it is tracked (index blobs, the
    worktree's diff against the index, untracked files by identity), its identity (size,
    mtime_ns, inode) elsewhere."""
    digest = hashlib.sha256()
    digest.update(json.dumps(["command", argv, cwd]).encode())
    for item in sorted(set(inputs)):
        if item.startswith("$"):
            state: object = ["env", item[1:], os.environ.get(item[1:])]
        else:
            state = ["path", item, path_state(os.path.normpath(os.path.join(cwd, item)))]
        digest.update(json.dumps(state).encode())
    return digest.hexdigest()


def path_state(path: str) -> list[object]:
    """What a file or folder is now: git's view inside a work tree, file identity elsewhere."""
    if not os.path.lexists(path):
        return ["missing"]
    folder = path if os.path.isdir(path) else os.path.dirname(path)
    top = _git(folder, "rev-parse", "--show-toplevel")
    if top is None:
        return ["files", _identities(path)]
    top = top.strip()
    tracked = _git(top, "ls-files", "-s", "-z", "--", path) or ""
    changed = _git(top, "diff", "--no-ext-diff", "--binary", "--", path) or ""
    others = (_git(top, "ls-files", "-z", "--others", "--exclude-standard", "--", path) or "")
    untracked = [
        [name, _identity(os.path.join(top, name))] for name in sorted(others.split("\0")) if name
    ]
    return ["git", tracked, hashlib.sha256(changed.encode()).hexdigest(), untracked]


def _git(folder: str, *args: str) -> str | None:
    """git's output in `folder`, or None when git is missing or the folder is no work tree."""
    try:
        done = subprocess.run(
            ["git", "-C", folder, *args], capture_output=True, text=True,
            errors="surrogateescape", timeout=INPUTS_GIT_TIMEOUT, check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def _identity(path: str) -> list[int] | None:
    try:
        facts = os.lstat(path)
    except OSError:
        return None
    return [facts.st_size, facts.st_mtime_ns, facts.st_ino]


def _identities(path: str) -> list[list[object]]:
    if not os.path.isdir(path):
        return [[path, _identity(path)]]
    found: list[list[object]] = []
    for folder, dirs, files in os.walk(path):
        dirs.sort()
        for name in sorted(files):
            full = os.path.join(folder, name)
            found.append([os.path.relpath(full, path), _identity(full)])
    return found
