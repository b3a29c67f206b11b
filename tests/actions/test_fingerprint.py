"""Workload fingerprints on real git repositories in tmp_path."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from swarmdeck import paths
from swarmdeck.actions.fingerprint import (
    ROOTS_FILE,
    ROOTS_KEPT,
    fingerprint,
    normalise_command,
    read_head,
    remember_root,
    remembered_root,
    tree_identity,
)

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]


def git_repo(path: Path, content: str = "a") -> Path:
    path.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    commit(path, content)
    return path


def commit(repo: Path, content: str) -> str:
    (repo / "a.txt").write_text(content)
    subprocess.run(["git", "-C", str(repo), "add", "a.txt"], check=True)
    subprocess.run([*GIT, "-C", str(repo), "commit", "-qm", content], check=True)
    head = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    )
    return head.stdout.strip()


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


def test_the_history_is_walked_once_per_head_commit_and_new_commits_keep_the_workload(
    tmp_path: Path,
) -> None:
    repo = git_repo(tmp_path / "one")
    first = tree_identity(repo).tree
    base = fingerprint(["make", "test"], repo)
    roots = Path(paths.state_dir()) / ROOTS_FILE
    head, root = roots.read_text().split()
    assert first == f"git:{root}"
    # What is remembered is what is used: a doctored line shows through...
    roots.write_text(f"{head} {'f' * 40}\n")
    assert tree_identity(repo).tree == "git:" + "f" * 40
    # ...but only for that commit: the next one walks its own history, to the same root.
    commit(repo, "second")
    assert tree_identity(repo).tree == first
    assert fingerprint(["make", "test"], repo) == base


def test_the_remembered_roots_keep_the_newest_and_ignore_garbage(tmp_path: Path) -> None:
    Path(paths.state_dir()).mkdir(parents=True)
    (Path(paths.state_dir()) / ROOTS_FILE).write_bytes(b"\xff\xfe not text\n")
    assert remembered_root("a" * 40) is None
    (Path(paths.state_dir()) / ROOTS_FILE).write_text("")
    heads = [f"{n:040x}" for n in range(ROOTS_KEPT + 1)]
    for head in heads:
        remember_root(head, "b" * 40)
    lines = (Path(paths.state_dir()) / ROOTS_FILE).read_text().splitlines()
    assert len(lines) <= ROOTS_KEPT
    assert remembered_root(heads[-1]) == "b" * 40
    assert remembered_root(heads[0]) is None


def git_head(repo: Path) -> str:
    result = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    )
    return result.stdout.strip()


def test_head_is_read_from_gits_files_as_git_itself_reads_it(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "one")
    commit(repo, "second")
    assert read_head(repo) == git_head(repo), "a branch's loose ref"
    subprocess.run(["git", "-C", str(repo), "pack-refs", "--all"], check=True)
    assert not (repo / ".git" / "refs" / "heads" / "master").exists()
    assert not (repo / ".git" / "refs" / "heads" / "main").exists()
    assert read_head(repo) == git_head(repo), "a packed ref"
    subprocess.run(["git", "-C", str(repo), "checkout", "-q", "--detach", "HEAD~1"], check=True)
    assert read_head(repo) == git_head(repo), "a detached HEAD"
    worktree = tmp_path / "linked"
    subprocess.run(
        ["git", "-C", str(repo), "worktree", "add", "-q", "-b", "other", str(worktree)],
        check=True,
    )
    commit(worktree, "in the worktree")
    assert (worktree / ".git").is_file()
    assert read_head(worktree) == git_head(worktree), "a linked worktree's own branch"


def test_a_repository_without_a_commit_has_no_head(tmp_path: Path) -> None:
    repo = tmp_path / "empty"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    assert read_head(repo) is None
    assert tree_identity(repo).tree == f"dir:{repo.resolve()}"


def test_a_run_at_a_commit_seen_before_starts_no_git(tmp_path: Path, monkeypatch) -> None:
    repo = git_repo(tmp_path / "one")
    known = tree_identity(repo)

    def no_git(*args, **kwargs):
        raise AssertionError(f"git was started: {args}")

    monkeypatch.setattr(subprocess, "run", no_git)
    assert tree_identity(repo) == known


def test_a_slow_git_walk_gives_the_workload_its_one_fingerprint(
    tmp_path: Path, monkeypatch
) -> None:
    """The first walk of a commit's history on a slow machine (a cold cache, a loaded or
    emulated one) took over the 2 s git was once given: that run fell back to the folder's
    identity, the next found the root and was another workload, so it booked the default
    instead of the peak the first had learned (seen in the cgroup v2 guest, under TCG)."""
    repo = git_repo(tmp_path / "one")
    fast = fingerprint(["make", "test"], repo)
    slow_bin = tmp_path / "slow-bin"
    slow_bin.mkdir()
    real_git = shutil.which("git")
    (slow_bin / "git").write_text(f'#!/bin/sh\nsleep 3\nexec "{real_git}" "$@"\n')
    (slow_bin / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{slow_bin}:{os.environ['PATH']}")
    monkeypatch.setenv("SWARMDECK_STATE_DIR", str(tmp_path / "fresh-state"))
    assert remembered_root(read_head(repo) or "") is None
    assert fingerprint(["make", "test"], repo) == fast


def test_a_fifo_in_place_of_a_git_file_is_no_head_and_never_blocks(tmp_path: Path) -> None:
    """A job's folder is the job's: a FIFO named HEAD would hold every run there forever if it
    were opened like a file."""
    import os
    import threading

    repo = tmp_path / "odd"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / ".git" / "HEAD").unlink()
    os.mkfifo(repo / ".git" / "HEAD")
    found: list[object] = []
    reader = threading.Thread(target=lambda: found.append(read_head(repo)), daemon=True)
    reader.start()
    reader.join(5)
    assert found == [None]


def test_a_family_is_the_program_and_its_subcommand_with_other_arguments() -> None:
    from swarmdeck.actions.fingerprint import family_of

    assert family_of(["pytest", "tests/a"]) == family_of(["/venv/bin/pytest", "tests/b"])
    assert family_of(["cargo", "build", "-p", "x"]) == ["cargo", "build"]
    assert family_of(["python3", "-S", "/w/run.py", "suite", "tests/a"]) == [
        "python3", "run.py", "suite"]
    assert family_of(["cargo", "test"]) != family_of(["cargo", "build"])
