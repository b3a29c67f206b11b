"""The workload fingerprint that learned peaks are keyed by: normalised command + tree identity.

The tree identity is the project's first commit when the cwd is inside a git repository, so a
scratch copy or a worktree of the same project shares its history, while another project, or
another directory within it, is a different workload and shows up as one. Outside git the
identity is the directory itself.

Finding the first commit walks the whole history (0.7 s for 100,000 commits), and every
`swarmdeck run` needs it; but the root of a given commit never changes, so it is walked once
per HEAD commit and remembered in the state folder, and HEAD itself is read from git's files.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from swarmdeck import paths
from swarmdeck.regular_files import read_regular

if TYPE_CHECKING:
    from collections.abc import Sequence
    from os import PathLike

ROOT_GIT_TIMEOUT = 60.0
"""Seconds for each git call that names the tree (HEAD, git dirs, a commit's root) as a run
starts: a bound for a hung repository only, never one a slow walk can reach. A walk that timed
out fell back to the folder's identity, so the same workload got two fingerprints, one per side
of the bound, and lost its learned peak: 2 s was passed by the first walk of this repository (933
commits) in the cgroup v2 test guest (14.8 s cold, then 4.3 and 2.2 s; qemu without KVM). The
walk is made once per HEAD commit and remembered."""
ROOTS_FILE = "git-roots"
"""In the state folder: one `HEAD-COMMIT ROOT-COMMIT` line per commit a job was run at."""
ROOTS_KEPT = 512
"""Lines the file keeps (the newest); an older commit's root is walked again when needed."""


@dataclass(frozen=True)
class TreeIdentity:
    """Which project tree a command runs in, and where inside it."""

    tree: str
    """'git:<root commit>' inside a repository with commits, else 'dir:<absolute path>'."""
    subdir: str
    """The cwd relative to the repository's top ('.' at the top); '.' outside git."""


def _is_commit_id(text: str) -> bool:
    """A full SHA-1 or SHA-256 object id in lower-case hex, as git writes them."""
    return len(text) in (40, 64) and not text.strip("0123456789abcdef")


READ_LIMIT = 64 << 20
"""Bytes of one git file (packed-refs is the largest) or the roots file read at most."""


def _read(path: str) -> str:
    """A regular file's text; OSError for anything else (a FIFO named HEAD in the job's folder
    would block every run there), a file over READ_LIMIT, or one not there."""
    return read_regular(path, READ_LIMIT).decode(errors="replace")


def find_repo_top(cwd: str) -> str | None:
    """The nearest directory at or above cwd (an absolute path) holding a .git entry."""
    directory = cwd
    while True:
        if os.path.exists(os.path.join(directory, ".git")):
            return directory
        parent = os.path.dirname(directory)
        if parent == directory:
            return None
        directory = parent


def _git(top: str, *args: str) -> str | None:
    """What git prints for `args` in `top`; None when it fails."""
    import subprocess  # only a commit seen for the first time starts git

    try:
        result = subprocess.run(
            ["git", "-C", top, *args],
            capture_output=True, text=True, timeout=ROOT_GIT_TIMEOUT, check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        # No git binary or a hung repository: the directory identity still works.
        return None
    return result.stdout if result.returncode == 0 else None


def _git_dirs(top: str) -> tuple[str, str] | None:
    """(this checkout's git directory, the repository's common one): they differ in a linked
    worktree, whose `.git` is a file naming its own directory."""
    dot_git = os.path.join(top, ".git")
    if os.path.isdir(dot_git):
        return dot_git, dot_git
    try:
        line = _read(dot_git).strip()
    except (OSError, UnicodeDecodeError):
        return None
    if not line.startswith("gitdir: "):
        return None
    git_dir = os.path.realpath(os.path.join(top, line.removeprefix("gitdir: ")))
    try:
        common = os.path.realpath(
            os.path.join(git_dir, _read(os.path.join(git_dir, "commondir")).strip())
        )
    except FileNotFoundError:
        common = git_dir
    except (OSError, UnicodeDecodeError):
        return None
    return git_dir, common


def _packed_ref(common: str, ref: str) -> str | None:
    try:
        text = _read(os.path.join(common, "packed-refs"))
    except (OSError, UnicodeDecodeError):
        return None
    for line in text.splitlines():
        commit, _, name = line.partition(" ")
        if name == ref and _is_commit_id(commit):
            return commit
    return None


def read_head(top: PathLike[str] | str) -> str | None:
    """HEAD's commit read from the files git keeps it in, without starting git; None when they
    do not say plainly (no commit yet, a reftable repository, anything unusual).

    A branch's commit is in its loose ref file, else in packed-refs. A ref that names another
    ref, or a packed ref whose line is followed by a peeled tag, is left to git.
    """
    dirs = _git_dirs(os.fspath(top))
    if dirs is None:
        return None
    git_dir, common = dirs
    try:
        head = _read(os.path.join(git_dir, "HEAD")).strip()
    except (OSError, UnicodeDecodeError):
        return None
    if _is_commit_id(head):
        return head
    ref = head.removeprefix("ref: ")
    if ref == head or not ref.startswith("refs/") or ".." in ref:
        return None
    for folder in (git_dir, common):
        try:
            loose = _read(os.path.join(folder, ref)).strip()
        except FileNotFoundError:
            continue
        except (OSError, UnicodeDecodeError):
            return None
        return loose if _is_commit_id(loose) else None
    return _packed_ref(common, ref)


def _root_commit(top: str) -> str | None:
    """The first commit of HEAD's history (the lowest id where unrelated histories merged).

    HEAD is read from git's files (starting git is a large share of a runner's start); git is asked
    only when they do not say plainly, and to walk the history of a commit seen for the first
    time.
    """
    head = read_head(top)
    if head is None:
        head = (_git(top, "rev-parse", "--verify", "--quiet", "HEAD^{commit}") or "").strip()
    if not _is_commit_id(head):
        return None
    known = remembered_root(head)
    if known is not None:
        return known
    roots = sorted((_git(top, "rev-list", "--max-parents=0", head) or "").split())
    if not roots:
        return None
    remember_root(head, roots[0])
    return roots[0]


def remembered_root(head: str) -> str | None:
    """The root commit found earlier for commit `head`, if the state folder still has it."""
    try:
        text = _read(os.path.join(paths.state_dir(), ROOTS_FILE))
    except (OSError, UnicodeDecodeError):
        return None
    at = text.rfind(head + " ")
    if at < 0 or (at > 0 and text[at - 1] != "\n"):
        return None
    root = text[at + len(head) + 1 :].partition("\n")[0]
    return root if _is_commit_id(root) else None


def remember_root(head: str, root: str) -> None:
    """Add one line; past ROOTS_KEPT lines, keep the newest half."""
    folder = paths.state_dir()
    path = os.path.join(folder, ROOTS_FILE)
    line = f"{head} {root}\n"
    try:
        os.makedirs(folder, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            # One O_APPEND write: lines of runners writing at once never interleave.
            os.write(fd, line.encode())
        finally:
            os.close(fd)
        if os.stat(path).st_size > ROOTS_KEPT * len(line):
            kept = _read(path).splitlines(keepends=True)[-ROOTS_KEPT // 2 :]
            spare = os.path.join(folder, f"{ROOTS_FILE}.{os.getpid()}")
            with open(spare, "w") as file:
                file.write("".join(kept))
            os.replace(spare, path)
    except (OSError, UnicodeDecodeError):
        # The file only saves walking the history again; a run goes on without it.
        pass


def tree_identity(cwd: PathLike[str] | str) -> TreeIdentity:
    folder = os.path.realpath(cwd)
    top = find_repo_top(folder)
    if top is not None:
        root = _root_commit(top)
        if root is not None:
            subdir = str(PurePosixPath(folder).relative_to(top))
            return TreeIdentity(tree=f"git:{root}", subdir=subdir)
    return TreeIdentity(tree=f"dir:{folder}", subdir=".")


def normalise_command(argv: Sequence[str], cwd: PathLike[str] | str) -> list[str]:
    """The command as a workload: the program by its name, paths under cwd made relative.

    `.venv/bin/python -m pytest` and `/usr/bin/python -m pytest` are the same workload;
    `pytest tests/a` and `pytest tests/b` are not.
    """
    if not argv:
        return []
    prefix = os.path.realpath(cwd) + os.sep
    words = [PurePosixPath(argv[0]).name]
    for word in argv[1:]:
        words.append(word[len(prefix):] if word.startswith(prefix) else " ".join(word.split()))
    return words


INTERPRETERS = frozenset({
    "python", "python3", "node", "ruby", "perl", "sh", "bash", "zsh", "deno", "bun", "uv",
})
"""Programs whose script, not themselves, says what runs: the family takes the script too."""


def family_of(argv: Sequence[str]) -> list[str]:
    """The command's family: the program (and its script, for an interpreter), then its
    subcommand when the next argument is a plain word. `pytest tests/a` and `pytest tests/b`
    are one family (pytest), `cargo build -p x` and `cargo build -p y` another (cargo build).
    """
    if not argv:
        return []
    family = [PurePosixPath(argv[0]).name]
    rest = list(argv[1:])
    program = family[0].rstrip("0123456789.")
    if program in INTERPRETERS:
        while rest and rest[0].startswith("-"):
            rest.pop(0)
        if rest:
            family.append(PurePosixPath(rest.pop(0)).name)
    if rest and _plain_word(rest[0]):
        family.append(rest[0])
    return family


def _plain_word(word: str) -> bool:
    """A subcommand-like word: letters first, then letters, digits, '-' or '_'."""
    return word[:1].isalpha() and all(c.isalnum() or c in "-_" for c in word)


def fingerprint(argv: Sequence[str], cwd: PathLike[str] | str) -> str:
    """A short stable key for the workload `argv` run in `cwd`."""
    ident = tree_identity(cwd)
    text = json.dumps([ident.tree, ident.subdir, normalise_command(argv, cwd)])
    return hashlib.sha256(text.encode()).hexdigest()[:16]
