"""The demo stops and removes only what it made, proven by what it recorded when it made it: a
slice it did not make is refused before anything starts, and an owner file it did not write
(planted, or naming what is no longer the scene's) gets nothing of anyone else stopped or
removed.

Every "foreign" slice and process here is this test's own; the machine's hierarchy root and
default slice are only ever named, to see the demo refuse them before it touches anything.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from cagekit import MIB, SWARMDECK, new_slice, remove_tree, write_config

from swarmdeck.cli import main
from swarmdeck.demo.scene import Scene, SceneSettings, sweep_abandoned
from swarmdeck.demo.scene_record import OWNER_FILE, PREFIX
from swarmdeck.probes.cgroups import cgroup_pids, read_hierarchies
from waiting import wait_for


@pytest.fixture
def foreign_slice() -> Iterator[Path]:
    """A slice of this test's own that the demo did not make, removed with what it holds."""
    path = new_slice()
    try:
        yield path
    finally:
        remove_tree(path)


def _sleeper(cgroup: Path | None = None, **popen: object) -> subprocess.Popen[bytes]:
    """A sleep of this test's own, moved into `cgroup` when one is named."""
    process = subprocess.Popen(["sleep", "300"], **popen)  # type: ignore[call-overload]
    if cgroup is not None:
        (cgroup / "cgroup.procs").write_text(str(process.pid))
    return process


def _ended(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.kill()
    process.wait()


def _demo(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`swarmdeck demo --no-ui` for one second, its temporary folder in tmp_path."""
    command = [SWARMDECK, "demo", "--no-ui", "--seconds", "1", "--step", "0.5", *args]
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)


def test_another_ledgers_slice_is_refused_and_its_running_job_kept(
    tmp_path: Path, foreign_slice: Path
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    write_config(other / "config.toml", foreign_slice, 256 * MIB, default_prediction="16M")
    env = {**os.environ, "SWARMDECK_STATE_DIR": str(other / "state"),
           "SWARMDECK_CONFIG": str(other / "config.toml")}
    job = subprocess.Popen([SWARMDECK, "run", "--", "sleep", "300"], env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def cages() -> list[Path]:
        return [p for p in foreign_slice.iterdir() if p.is_dir() and cgroup_pids(p)]

    try:
        wait_for(cages, timeout=60)
        (cage,) = cages()
        members = cgroup_pids(cage)
        done = _demo(tmp_path, "--slice", foreign_slice.name)
        assert done.returncode == 251, done.stderr
        (line,) = done.stderr.splitlines()
        assert str(foreign_slice) in line and "already exists" in line, line
        assert job.poll() is None, "the other ledger's job was stopped"
        assert cgroup_pids(cage) == members and foreign_slice.is_dir()
        assert not list(tmp_path.glob(f"{PREFIX}*")), "the demo started a scene all the same"
    finally:
        job.send_signal(signal.SIGTERM)
        job.wait(timeout=60)
        assert job.stderr is not None
        job.stderr.close()


def test_a_slice_whose_peer_slice_exists_is_refused(tmp_path: Path, foreign_slice: Path) -> None:
    peer = foreign_slice / "demo-peer"
    peer.mkdir()
    sleeper = _sleeper(peer)
    try:
        done = _demo(tmp_path, "--slice", f"{foreign_slice.name}/demo")
        assert done.returncode == 251, done.stderr
        (line,) = done.stderr.splitlines()
        assert str(peer) in line, line
        assert sleeper.poll() is None and cgroup_pids(peer) == [sleeper.pid]
        assert not (foreign_slice / "demo").exists()
    finally:
        _ended(sleeper)


def _machine_slices() -> list[str]:
    """How the machine's own cgroups can be named to `--slice`: the hierarchy root by its full
    path, the default slice by its name, by its full path, and a slice inside it."""
    root = read_hierarchies().v1_memory or read_hierarchies().v2
    if root is None:
        pytest.skip("no cgroup hierarchy is mounted")
    return [root, "swarmdeck", f"{root}/swarmdeck", "swarmdeck/demo", "swarmdeck.slice"]


@pytest.mark.parametrize("index", range(5), ids=["root", "default", "default-path",
                                                  "inside-default", "default-unit"])
def test_the_hierarchy_root_and_the_default_slice_are_refused_before_anything_starts(
    index: int, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    """In-process, with every way the demo could act on a slice replaced by a failure, so that
    a demo that does not refuse fails here without ever reaching the machine's cgroups."""
    name = _machine_slices()[index]
    from swarmdeck.demo import scene

    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("the demo went on past a slice it must refuse")

    monkeypatch.setattr(scene, "Scene", never)
    monkeypatch.setattr(scene, "sweep_abandoned", never)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    code = main(["demo", "--no-ui", "--seconds", "1", "--slice", name])
    lines = capsys.readouterr().err.splitlines()
    assert code == 251, lines
    assert len(lines) == 1 and ("hierarchy" in lines[0] or "default slice" in lines[0]), lines


def _legacy_owner(pid: int, slices: list[str]) -> str:
    """An owner file as demos before this rule wrote it: 'PID TICKS' and a slice a line."""
    return "\n".join([f"{pid} 1", *slices]) + "\n"


def _forged_owner(pid: int, folder: Path, slices: list[Path]) -> str:
    """An owner file in the demo's own form, with all a forger can read: a dead pid, the
    folder's and the slices' real device and inode, a made-up token."""
    made = [{"path": str(path), "device": path.stat().st_dev, "inode": path.stat().st_ino}
            for path in slices]
    folder_stat = folder.stat()
    return json.dumps({
        "pid": pid, "start_ticks": 1, "token": "0" * 32,
        "folder": {"device": folder_stat.st_dev, "inode": folder_stat.st_ino},
        "cgroups": made, "units": [],
    })


@pytest.mark.parametrize("form", ["legacy", "forged"])
def test_a_planted_owner_file_gets_nothing_of_others_stopped_or_removed(
    tmp_path: Path, foreign_slice: Path, form: str
) -> None:
    temporary = tmp_path / "tmp"
    folder = temporary / f"{PREFIX}planted"
    (folder / "work").mkdir(parents=True)
    gone = subprocess.Popen(["true"])
    gone.wait()
    text = (_legacy_owner(gone.pid, [str(foreign_slice)]) if form == "legacy"
            else _forged_owner(gone.pid, folder, [foreign_slice]))
    (folder / OWNER_FILE).write_text(text)
    in_slice = _sleeper(foreign_slice)
    env = {**os.environ, "SWARMDECK_STATE_DIR": str(folder / "state")}
    naming = _sleeper(env=env, cwd=folder / "work")
    said: list[str] = []
    try:
        sweep_abandoned(temporary, say=said.append)
        assert in_slice.poll() is None, "a process in a slice the demo did not make was stopped"
        assert cgroup_pids(foreign_slice) == [in_slice.pid] and foreign_slice.is_dir()
        assert naming.poll() is None, "a process naming the folder was stopped"
        assert (folder / "work").is_dir(), "a folder a live process works in was removed"
    finally:
        _ended(in_slice)
        _ended(naming)
    # Once nobody works in it, the next sweep leaves the slice (never the scene's) alone still.
    with contextlib.suppress(OSError):
        sweep_abandoned(temporary, say=said.append)
    assert foreign_slice.is_dir()


def test_a_demo_started_beside_a_planted_owner_file_leaves_others_alone(
    tmp_path: Path, foreign_slice: Path
) -> None:
    """The same, through `swarmdeck demo` itself: the sweep it runs first, and its own scene."""
    folder = tmp_path / f"{PREFIX}planted"
    (folder / "work").mkdir(parents=True)
    gone = subprocess.Popen(["true"])
    gone.wait()
    (folder / OWNER_FILE).write_text(_legacy_owner(gone.pid, [str(foreign_slice)]))
    in_slice = _sleeper(foreign_slice)
    naming = _sleeper(env={**os.environ, "X": f"{folder}/state"}, cwd=folder / "work")
    try:
        done = _demo(tmp_path, "--uncaged")
        assert done.returncode == 0, done.stderr
        assert in_slice.poll() is None and naming.poll() is None
        assert foreign_slice.is_dir() and (folder / "work").is_dir()
    finally:
        _ended(in_slice)
        _ended(naming)


def test_a_process_it_did_not_start_survives_the_scenes_stop(
    tmp_path: Path, demo_slice: str | None
) -> None:
    """A process of someone else's that entered the scene's own slice is not the scene's to
    stop: the scene stops its own, says the slice is left, and leaves both."""
    if demo_slice is None:
        pytest.skip("needs a writable cgroup v1 memory hierarchy")
    said: list[str] = []
    scene = Scene(SceneSettings(step=0.5, slice_name=demo_slice), root=tmp_path / "scene",
                  say=said.append)
    stranger: subprocess.Popen[bytes] | None = None
    outside = dict(os.environ)  # the scene sets its own in this process, for what it starts
    try:
        scene.start()
        assert scene.slice_path is not None
        stranger = _sleeper(scene.slice_path, env=outside)
    finally:
        scene.stop()
    assert stranger is not None
    try:
        assert stranger.poll() is None, "the scene stopped a process it did not start"
        assert scene.slice_path.is_dir() and cgroup_pids(scene.slice_path) == [stranger.pid]
        assert any(str(scene.slice_path) in line and "left" in line for line in said), said
        assert not (tmp_path / "scene").exists()
    finally:
        _ended(stranger)
