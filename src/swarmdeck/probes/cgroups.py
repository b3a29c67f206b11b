"""Where the memory cages can live on this host, and what their cgroup files say right now.

Read-only: the cage backends (actions/cage*.py) use these facts to decide where and how to build
cages, and the ledger probe uses the same facts to read the slice, so both always agree on
which cgroup is "the slice".
"""

from __future__ import annotations

import functools
import os
import select
import threading
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from swarmdeck.probes.kernel_files import read_bytes
from swarmdeck.probes.procs import own_file

SYSTEMD_BOOTED = "/run/systemd/system"
DEFAULT_SLICE_NAME = "swarmdeck"
DEFAULT_SCOPE_SLICE = "swarmdeck.slice"

if TYPE_CHECKING:
    from collections.abc import Callable
    from os import PathLike
    from typing import TextIO

V2 = "cgroup-v2"
V1 = "cgroup-v1"
SCOPE = "systemd-scope"


@dataclass(frozen=True)
class Hierarchies:
    """The mount points that matter for memory cages (None where absent)."""

    v1_memory: str | None
    v2: str | None


@dataclass(frozen=True)
class OwnCgroups:
    """This process's cgroup paths inside each hierarchy, as its own cgroup file lists them."""

    v1_memory: str | None
    v2: str | None


@dataclass(frozen=True)
class SliceSite:
    """One backend's verdict: whether it can cage jobs here, and if so where the slice is.

    `placement` says why the slice is where it is ("configured", "hierarchy root",
    "under own cgroup"), so `status` can tell a person which one was chosen.
    """

    backend: str
    available: bool
    reason: str
    path: str | None = None
    placement: str = ""
    unit: str = ""
    """The systemd slice unit (scope backend only)."""


@dataclass(frozen=True)
class MemoryReading:
    """One cgroup's memory at one moment, v1 or v2 alike."""

    usage: int
    inactive_file: int
    peak: int | None
    """The kernel's high-water mark (v1 max_usage_in_bytes, v2 memory.peak)."""

    @property
    def working_set(self) -> int:
        """Usage minus page cache the kernel can drop at once: what the jobs really hold."""
        return max(0, self.usage - self.inactive_file)


def parse_mountinfo(text: str) -> Hierarchies:
    """The v1 memory mount and the cgroup2 mount from this process's mountinfo."""
    v1_memory: str | None = None
    v2: str | None = None
    for line in text.splitlines():
        left, sep, right = line.partition(" - ")
        if not sep:
            continue
        fields, tail = left.split(), right.split()
        if len(fields) < 5 or len(tail) < 3:
            continue
        mount_point = str(PurePosixPath(_unescape(fields[4])))
        fstype, options = tail[0], tail[2].split(",")
        if fstype == "cgroup" and "memory" in options and v1_memory is None:
            v1_memory = mount_point
        elif fstype == "cgroup2" and v2 is None:
            v2 = mount_point
    return Hierarchies(v1_memory=v1_memory, v2=v2)


def _unescape(text: str) -> str:
    """mountinfo writes spaces and tabs in paths as octal escapes."""
    return text.replace("\\040", " ").replace("\\011", "\t").replace("\\134", "\\")


def parse_proc_cgroup(text: str) -> OwnCgroups:
    """This process's memory cgroup (v1 line naming `memory`) and unified cgroup (`0::`)."""
    v1_memory: str | None = None
    v2: str | None = None
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        number, controllers, path = parts
        if number == "0" and controllers == "":
            v2 = path
        elif "memory" in controllers.split(","):
            v1_memory = path
    return OwnCgroups(v1_memory=v1_memory, v2=v2)


class MountWatch:
    """This process's mountinfo, parsed once and again only after a mount or an unmount.

    The kernel marks an open mountinfo file with a priority event (POLLPRI) when the mount
    table changes, so a look costs one poll instead of a read and a parse (on every refresh
    and every `swarmdeck run`). A forked child, whose open file
    is its parent's, opens its own; so does a changed /proc root.
    """

    def __init__(self, parse: Callable[[str], Hierarchies]) -> None:
        self._parse = parse
        self._lock = threading.Lock()
        self._file: TextIO | None = None
        self._key: tuple[int, str] | None = None
        self._poller = select.poll()
        self._parsed: Hierarchies | None = None

    def read(self) -> Hierarchies:
        """What `parse` makes of the mount table as it is now."""
        with self._lock:
            path = own_file("mountinfo")
            key = (os.getpid(), path)
            if self._file is None or self._key != key:
                self._parsed = self._open(path, key)
            elif self._changed() or self._parsed is None:
                self._parsed = self._reparse(self._file)
            return self._parsed

    def _open(self, path: str, key: tuple[int, str]) -> Hierarchies:
        if self._file is not None:
            self._poller.unregister(self._file)
            self._file.close()
            self._file = None
        file = open(path)  # noqa: SIM115 - kept open: the poll watches it
        self._poller.register(file, select.POLLPRI)
        self._key, self._file = key, file
        return self._reparse(file)

    def _changed(self) -> bool:
        return any(flags & (select.POLLPRI | select.POLLERR) for _, flags in self._poller.poll(0))

    def _reparse(self, file: TextIO) -> Hierarchies:
        file.seek(0)
        return self._parse(file.read())


_mounts = MountWatch(parse_mountinfo)


def read_hierarchies() -> Hierarchies:
    return _mounts.read()


def read_own_cgroups() -> OwnCgroups:
    with open(own_file("cgroup")) as file:
        return parse_proc_cgroup(file.read())


def _read_text(path: str) -> str:
    with open(path) as file:
        return file.read()


def kernel_name(cgroup: PathLike[str] | str, hier: Hierarchies | None = None) -> str | None:
    """The cgroup as the kernel log names it ("/swarmdeck/job-1"): its path below the mount of
    its hierarchy (cgroup v1 memory, or the unified one); None when it is under neither."""
    hier = hier or read_hierarchies()
    path = os.fspath(cgroup)
    for root in (hier.v1_memory, hier.v2):
        if root is not None and PurePosixPath(path).is_relative_to(root):
            return "/" + str(PurePosixPath(path).relative_to(root)).strip(".")
    return None


@functools.lru_cache(maxsize=64)
def configured_path(setting: str, root: str) -> str:
    """The slice the config names: a full path inside the hierarchy, or a path relative to it.
    Kept once worked out: the memory book asks at every refresh, and pathlib interns each part
    of a path it parses (the slice's name anew each time; see bench/results/app.md)."""
    if setting.startswith("/") and PurePosixPath(setting).is_relative_to(root):
        return str(PurePosixPath(setting))
    return str(PurePosixPath(root, setting.strip("/")))


def v2_parent_verdict(
    controllers: set[str], subtree_control: set[str], has_processes: bool, writable: bool
) -> str:
    """Why a v2 cgroup cannot hold a capped slice beneath it, or "" when it can.

    Memory must be offered to it (cgroup.controllers) and passed on to its children
    (cgroup.subtree_control), which a non-root cgroup may only turn on while it holds no
    processes of its own.
    """
    if "memory" not in controllers:
        return "has no memory controller"
    if not writable:
        return "is not writable by this user"
    if "memory" not in subtree_control and has_processes:
        return "holds processes, so it cannot pass the memory controller to a slice"
    return ""


def _words(path: str) -> set[str]:
    try:
        return set(_read_text(path).split())
    except OSError:
        return set()


def _has_processes(cgroup: str) -> bool:
    try:
        return bool(_read_text(f"{cgroup}/cgroup.procs").strip())
    except OSError:
        return False


def _v2_parent_problem(parent: str, is_root: bool) -> str:
    problem = v2_parent_verdict(
        controllers=_words(f"{parent}/cgroup.controllers"),
        subtree_control=_words(f"{parent}/cgroup.subtree_control"),
        has_processes=not is_root and _has_processes(parent),
        writable=os.access(parent, os.W_OK),
    )
    return f"{parent} {problem}" if problem else ""


def v2_site(setting: str, hier: Hierarchies, own: OwnCgroups) -> SliceSite:
    """A delegated cgroup v2 subtree with the memory controller, if there is one."""
    if hier.v2 is None:
        return SliceSite(V2, False, "no cgroup2 hierarchy is mounted")
    root = hier.v2
    if "memory" not in _words(f"{root}/cgroup.controllers"):
        return SliceSite(
            V2, False, f"the cgroup2 hierarchy at {root} has no memory controller"
            " (memory is bound to cgroup v1 here)"
        )
    if setting:
        path = configured_path(setting, root)
        if os.path.exists(path):
            return _v2_existing(path, "configured")
        parent = str(PurePosixPath(path).parent)
        problem = _v2_parent_problem(parent, parent == root)
        if problem:
            return SliceSite(V2, False, f"configured slice {path}: its parent {problem}")
        return SliceSite(V2, True, "", path, "configured")
    candidates = [(root, "hierarchy root")]
    if own.v2 not in (None, "/"):
        candidates.append((str(PurePosixPath(root, str(own.v2).strip("/"))), "under own cgroup"))
    problems = []
    for parent, placement in candidates:
        path = str(PurePosixPath(parent, DEFAULT_SLICE_NAME))
        if os.path.exists(path):
            site = _v2_existing(path, placement)
            if site.available:
                return site
            problems.append(site.reason)
            continue
        problem = _v2_parent_problem(parent, parent == root)
        if not problem:
            return SliceSite(V2, True, "", path, placement)
        problems.append(problem)
    return SliceSite(V2, False, "; ".join(problems))


def _v2_existing(path: str, placement: str) -> SliceSite:
    if "memory" not in _words(f"{path}/cgroup.controllers"):
        return SliceSite(V2, False, f"slice {path} has no memory controller")
    if not os.access(path, os.W_OK):
        return SliceSite(V2, False, f"slice {path} is not writable by this user")
    return SliceSite(V2, True, "", path, placement)


def v1_site(setting: str, hier: Hierarchies, own: OwnCgroups) -> SliceSite:
    """A writable directory in the cgroup v1 memory hierarchy."""
    if hier.v1_memory is None:
        return SliceSite(V1, False, "no cgroup v1 memory hierarchy is mounted")
    root = hier.v1_memory
    if setting:
        path = configured_path(setting, root)
        target = path if os.path.exists(path) else str(PurePosixPath(path).parent)
        if not os.path.isdir(target):
            return SliceSite(V1, False, f"configured slice {path}: {target} does not exist")
        if not os.access(target, os.W_OK):
            return SliceSite(V1, False, f"configured slice {path}: {target} is not writable")
        return SliceSite(V1, True, "", path, "configured")
    candidates = [(root, "hierarchy root")]
    if own.v1_memory not in (None, "/"):
        own_path = str(PurePosixPath(root, str(own.v1_memory).strip("/")))
        candidates.append((own_path, "under own cgroup"))
    for parent, placement in candidates:
        path = str(PurePosixPath(parent, DEFAULT_SLICE_NAME))
        target = path if os.path.exists(path) else parent
        if os.access(target, os.W_OK):
            return SliceSite(V1, True, "", path, placement)
    return SliceSite(V1, False, f"neither {root} nor this process's own memory cgroup is writable")


def scope_slice_path(unit: str, root: str) -> str:
    """Where systemd puts a slice unit: "a-b.slice" lives at a.slice/a-b.slice."""
    stem = unit.removesuffix(".slice")
    parts = stem.split("-")
    nested = ["-".join(parts[: i + 1]) + ".slice" for i in range(len(parts))]
    return str(PurePosixPath(root, *nested))


def user_manager_cgroup(own: OwnCgroups | None) -> str:
    """Where a non-root user's systemd manager lives, whose subtree `systemd-run --user` uses:
    the user@UID.service this process runs under, else systemd's standard place for it."""
    uid = os.geteuid()
    manager = f"user@{uid}.service"
    parts = str(own.v2 if own and own.v2 else "").strip("/").split("/")
    if manager in parts:
        return "/".join(parts[: parts.index(manager) + 1])
    return f"user.slice/user-{uid}.slice/{manager}"


def scope_site(setting: str, hier: Hierarchies, own: OwnCgroups | None = None) -> SliceSite:
    """`systemd-run --scope` under a swarmdeck slice, when systemd runs this machine; a
    non-root user's slice is its user manager's (`systemd-run --user`)."""
    if not os.path.isdir(SYSTEMD_BOOTED):
        return SliceSite(SCOPE, False, "systemd is not PID 1 (/run/systemd/system is absent)")
    # Imported here: shutil brings its archive modules (bz2, lzma, zlib), which every
    # `swarmdeck run` would import only to learn that systemd is not PID 1.
    import shutil

    if shutil.which("systemd-run") is None:
        return SliceSite(SCOPE, False, "systemd-run is not installed")
    unit = setting if setting.endswith(".slice") else DEFAULT_SCOPE_SLICE
    unified = hier.v2 is not None and "memory" in _words(f"{hier.v2}/cgroup.controllers")
    root = hier.v2 if unified else hier.v1_memory
    if root is None:
        return SliceSite(SCOPE, False, "no cgroup hierarchy with memory is mounted")
    if os.geteuid() != 0:
        root = str(PurePosixPath(root, user_manager_cgroup(own if unified else None)))
    return SliceSite(SCOPE, True, "", scope_slice_path(unit, root), "systemd slice unit", unit)


def names_a_unit(setting: str) -> bool:
    """Whether memory.slice names a systemd slice unit ("NAME.slice") rather than a cgroup."""
    return setting.endswith(".slice") and "/" not in setting


def slice_sites(setting: str = "") -> list[SliceSite]:
    """Every backend's verdict, in the order they are preferred.

    A slice unit in the config is systemd's to make where systemd runs the machine: the cgroup
    backends would make a cgroup of that name beside systemd's own, which systemd does not know.
    """
    hier, own = read_hierarchies(), read_own_cgroups()
    scope = scope_site(setting, hier, own)
    if names_a_unit(setting) and scope.available:
        why = f"memory.slice names the systemd slice unit {setting}, which systemd makes"
        return [SliceSite(V2, False, why), SliceSite(V1, False, why), scope]
    return [v2_site(setting, hier, own), v1_site(setting, hier, own), scope]


def chosen_site(sites: list[SliceSite]) -> SliceSite | None:
    """The first usable backend, or None when there is none."""
    return next((site for site in sites if site.available), None)


def why_no_site(sites: list[SliceSite]) -> str:
    """One line naming why no backend can cage a job here."""
    return "; ".join(f"{site.backend}: {site.reason}" for site in sites)


def parse_flat_keyed(text: str) -> dict[str, int]:
    """memory.stat, memory.events and memory.oom_control: "key value" per line."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].lstrip("-").isdigit():
            out[parts[0]] = int(parts[1])
    return out


def read_int(path: PathLike[str] | str) -> int | None:
    """A one-number cgroup file; "max" and v1's near-2^63 "unlimited" read as None."""
    try:
        text = _read_text(os.fspath(path)).strip()
    except OSError:
        return None
    if text == "max" or not text.isdigit():
        return None
    value = int(text)
    return None if value >= 1 << 62 else value


def read_keyed(path: PathLike[str] | str) -> dict[str, int]:
    try:
        return parse_flat_keyed(_read_text(os.fspath(path)))
    except OSError:
        return {}


def read_memory(cgroup: PathLike[str] | str) -> MemoryReading | None:
    """What a v1 or v2 memory cgroup holds now; None when the cgroup does not exist.

    Read on every refresh for every running job, so the files are opened by name without an
    existence check first, of memory.stat only the one line needed is picked out, and the cap
    (the ledger row's) is not read again.
    """
    base = os.fspath(cgroup)
    usage = read_bytes(base + "/memory.usage_in_bytes")
    if usage is not None:
        stat = read_bytes(base + "/memory.stat") or b""
        inactive = _stat_value(stat, b"total_inactive_file")
        if inactive is None:
            inactive = _stat_value(stat, b"inactive_file")
        return MemoryReading(
            usage=_number(usage) or 0,
            inactive_file=inactive or 0,
            peak=_number(read_bytes(base + "/memory.max_usage_in_bytes")),
        )
    usage = read_bytes(base + "/memory.current")
    if usage is not None:
        stat = read_bytes(base + "/memory.stat") or b""
        return MemoryReading(
            usage=_number(usage) or 0,
            inactive_file=_stat_value(stat, b"inactive_file") or 0,
            peak=_number(read_bytes(base + "/memory.peak")),
        )
    return None


def _number(raw: bytes | None) -> int | None:
    """A one-number cgroup file's value, as read_int reads it."""
    if raw is None:
        return None
    text = raw.strip()
    if not text.isdigit():
        return None
    value = int(text)
    return None if value >= 1 << 62 else value


def _stat_value(stat: bytes, key: bytes) -> int | None:
    """The value of one "key value" line of memory.stat, None when the key is absent."""
    at = (b"\n" + stat).find(b"\n" + key + b" ")
    if at < 0:
        return None
    start = at + len(key) + 1
    end = stat.find(b"\n", start)
    value = stat[start : end if end >= 0 else len(stat)].strip()
    return int(value) if value.isdigit() else None


def cgroup_pids(cgroup: PathLike[str] | str) -> list[int]:
    """The processes in one cgroup (not its children); empty when it is gone."""
    return _read_ids(os.path.join(cgroup, "cgroup.procs")) or []


THREAD_FILES = ("tasks", "cgroup.threads")
"""Where a cgroup lists its threads: v1 `tasks`, v2 `cgroup.threads` (every thread, in any
cgroup, threaded or not)."""


@dataclass(frozen=True)
class CageMembers:
    """Who is inside a cage now, read from the kernel's own lists: no walk of the process table.

    A process that moved itself out of the cage is not listed; one that entered it is.
    """

    pids: tuple[int, ...]
    """Processes (thread-group ids), from `cgroup.procs`."""
    tids: tuple[int, ...]
    """Every thread of them, from `tasks` or `cgroup.threads`."""


def cage_members(cgroup: PathLike[str] | str) -> CageMembers | None:
    """The processes and threads in a cage and every cgroup under it; None once it is gone."""
    pids = _cage_ids(os.fspath(cgroup), ("cgroup.procs",))
    if pids is None:
        return None
    tids = _cage_ids(os.fspath(cgroup), THREAD_FILES)
    return CageMembers(tuple(pids), tuple(tids or ()))


def cage_thread_ids(cgroup: PathLike[str] | str) -> tuple[int, ...] | None:
    """The threads in a cage and every cgroup under it, from their thread lists alone (what
    each refresh samples); None once it is gone."""
    tids = _cage_ids(os.fspath(cgroup), THREAD_FILES)
    return None if tids is None else tuple(tids)


def _cage_ids(top: str, names: tuple[str, ...]) -> list[int] | None:
    """The ids the first of `names` that a cgroup has lists, over the cgroup and every one under
    it, sorted; None when the top one is gone."""
    ids: set[int] = set()
    todo = [top]
    while todo:
        current = todo.pop()
        listed = next(
            (found for name in names if (found := _read_ids(f"{current}/{name}")) is not None),
            None,
        )
        if listed is None:
            if current == top:
                return None
            continue  # a sub-cgroup removed while we looked holds no one now
        ids.update(listed)
        todo += _subdirectories(current)
    return sorted(ids)


def _read_ids(path: str) -> list[int] | None:
    """The numbers of a cgroup list file, or None when the file is not there."""
    text = read_bytes(path)
    return None if text is None else [int(word) for word in text.split()]


def _subdirectories(cgroup: str) -> list[str]:
    """The cgroups directly under one; a directory's link count (2 + its subdirectories, as
    kernfs keeps it) spares listing a leaf, which every job's cage is."""
    try:
        if os.stat(cgroup).st_nlink <= 2:
            return []
        with os.scandir(cgroup) as entries:
            return [entry.path for entry in entries if entry.is_dir(follow_symlinks=False)]
    except OSError:
        return []
