"""A demo killed before it could clean up is removed by the next `swarmdeck demo`: its processes,
its slices and its folder; a running scene, a folder without an owner and another user's folder
are left alone."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

from leftovers import processes_mentioning

from swarmdeck.demo.scene import sweep_abandoned
from swarmdeck.demo.scene_record import PREFIX, MadeThing, SceneOwner, abandoned_scenes, write_owner
from swarmdeck.probes.cgroups import read_hierarchies
from swarmdeck.probes.procs import ProcessIdentity, identity

SWARMDECK = str(Path(sys.executable).parent / "swarmdeck")
SUMMARY = re.compile(r"demo scene in (\S+): ")


def _scene_folder(tmp_path: Path, name: str) -> Path:
    folder = tmp_path / f"{PREFIX}{name}"
    folder.mkdir()
    return folder


def _owner(folder: Path, process: ProcessIdentity) -> None:
    write_owner(SceneOwner(process, "5" * 32, MadeThing.of(folder)))


def _dead_owner(folder: Path) -> None:
    gone = subprocess.Popen(["true"])
    gone.wait()
    _owner(folder, ProcessIdentity(gone.pid, 1))


def test_a_scene_whose_owner_is_gone_is_found(tmp_path: Path) -> None:
    folder = _scene_folder(tmp_path, "dead")
    _dead_owner(folder)
    assert [root for root, _ in abandoned_scenes(tmp_path)] == [folder]


def test_a_running_scene_is_not_taken(tmp_path: Path) -> None:
    me = identity(os.getpid())
    assert me is not None
    _owner(_scene_folder(tmp_path, "alive"), me)
    assert abandoned_scenes(tmp_path) == []


def test_a_reused_pid_does_not_keep_a_scene_alive(tmp_path: Path) -> None:
    folder = _scene_folder(tmp_path, "reused")
    me = identity(os.getpid())
    assert me is not None
    _owner(folder, ProcessIdentity(me.pid, me.start_ticks + 1))
    assert [root for root, _ in abandoned_scenes(tmp_path)] == [folder]


def test_folders_without_an_owner_of_another_user_or_links_are_left_alone(tmp_path: Path) -> None:
    _scene_folder(tmp_path, "no-owner")
    theirs = _scene_folder(tmp_path, "theirs")
    _dead_owner(theirs)
    os.chown(theirs, 65534, 65534)
    target = tmp_path / "elsewhere"
    target.mkdir()
    _dead_owner(target)
    (tmp_path / f"{PREFIX}link").symlink_to(target)
    other = tmp_path / "not-a-scene"
    other.mkdir()
    _dead_owner(other)
    copied = _scene_folder(tmp_path, "copied")  # an owner file that names another folder
    (copied / "scene-owner").write_bytes((other / "scene-owner").read_bytes())
    assert abandoned_scenes(tmp_path) == []
    assert sweep_abandoned(tmp_path, say=lambda line: None) == []
    assert theirs.is_dir() and target.is_dir() and other.is_dir() and copied.is_dir()


def test_the_next_demo_removes_what_a_killed_one_left(
    tmp_path: Path, demo_slice: str | None
) -> None:
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    command = [SWARMDECK, "demo", "--no-ui", "--seconds", "300", "--step", "0.5"]
    command += ["--slice", demo_slice] if demo_slice else []
    demo = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert demo.stdout is not None
        line = demo.stdout.readline()
        while line.startswith("swarmdeck demo: "):
            line = demo.stdout.readline()
        match = SUMMARY.search(line)
        assert match, line
        root = Path(match.group(1))
    finally:
        demo.send_signal(signal.SIGKILL)
        demo.wait()
        assert demo.stdout is not None
        demo.stdout.close()
    assert root.parent == tmp_path
    assert processes_mentioning(str(root)), "a SIGKILLed demo leaves its processes"
    slice_path = Path(read_hierarchies().v1_memory or "/nonexistent", demo_slice or "none")
    assert slice_path.is_dir() == (demo_slice is not None)

    command[command.index("300")] = "0.5"
    try:
        after = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
    finally:
        sweep_abandoned(tmp_path, say=lambda line: None)  # a failing run leaves nothing either
    assert after.returncode == 0, after.stderr
    said = [line for line in after.stderr.splitlines() if "earlier demo" in line]
    assert len(said) == 1 and str(root) in said[0] and f"pid {demo.pid}" in said[0], said
    assert processes_mentioning(str(root)) == []
    assert not root.exists()
    assert not slice_path.exists()
