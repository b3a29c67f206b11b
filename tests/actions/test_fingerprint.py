"""Workload fingerprints on real git repositories in tmp_path."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from swarmdeck.actions.fingerprint import fingerprint, normalise_command, tree_identity


def git_repo(path: Path, content: str = "a") -> Path:
    path.mkdir(parents=True)
    env = ["-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    (path / "a.txt").write_text(content)
    subprocess.run(["git", "-C", str(path), "add", "a.txt"], check=True)
    subprocess.run(["git", *env, "-C", str(path), "commit", "-qm", "first"], check=True)
    return path


def test_a_copy_of_the_same_project_shares_the_fingerprint(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "one")
    copy = tmp_path / "two"
    shutil.copytree(repo, copy)
    assert fingerprint(["make", "test"], repo) == fingerprint(["make", "test"], copy)
    assert tree_identity(repo).tree.startswith("git:")


def test_another_project_or_subdirectory_or_command_is_another_workload(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "one")
    other = git_repo(tmp_path / "other", content="another project")
    (repo / "sub").mkdir()
    base = fingerprint(["make", "test"], repo)
    assert fingerprint(["make", "test"], other) != base
    assert fingerprint(["make", "test"], repo / "sub") != base
    assert fingerprint(["make", "check"], repo) != base


def test_outside_git_the_directory_is_the_identity(tmp_path: Path) -> None:
    assert tree_identity(tmp_path).tree == f"dir:{tmp_path.resolve()}"


def test_the_program_counts_by_its_name_and_paths_under_cwd_are_relative(tmp_path: Path) -> None:
    argv = ["/opt/venv/bin/python", "-m", "pytest", f"{tmp_path}/tests/a.py"]
    assert normalise_command(argv, tmp_path) == ["python", "-m", "pytest", "tests/a.py"]
