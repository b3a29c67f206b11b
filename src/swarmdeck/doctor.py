"""`swarmdeck doctor`: on a first run, one screen saying what works here and what to do about
what does not, each part read from the thing itself (the cgroup hierarchies, the slice's owner
record, the settings files, the Claude Code folder, each peer over ssh, the Slurm client, NVML).

A part is fine (✓), worth doing something about while jobs still run (!), or in the way (✗):
no cage, a slice another ledger holds, a state folder that cannot be used, hooks that start a
swarmdeck that is gone (every Bash call of every agent would fail its hook), a configured peer
or cluster that does not answer. Any ✗ makes the host "not usable" (exit 78, the reasons on
stderr); the ! lines say what would make the rest work.
"""

from __future__ import annotations

import enum
import os
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from swarmdeck import paths
from swarmdeck.probes.cgroups import SCOPE, V1, V2, chosen_site, slice_sites

if TYPE_CHECKING:
    from swarmdeck.config import Config


class Mark(enum.Enum):
    """How a part stands."""

    OK = "✓"
    ACTION = "!"
    BROKEN = "✗"
    NONE = "–"
    """Not set up, and nothing needs it (no peers configured, no GPU)."""


@dataclass(frozen=True)
class Part:
    """One line of the doctor's screen."""

    mark: Mark
    name: str
    says: str


BACKEND_WORDS = {
    V1: "cgroup v1",
    V2: "cgroup v2 (a delegated subtree)",
    SCOPE: "systemd scope (systemd-run --scope)",
}
"""Each cage backend as a person knows it."""


def cage_parts(config: Config, ledger: str) -> list[Part]:
    """The cage backend and why it was chosen, then the slice and its owner."""
    from swarmdeck.actions.cage.slice_claim import private_ledger_rule
    from swarmdeck.probes.machine import mem_total
    from swarmdeck.probes.memory_book import reserve_problem
    from swarmdeck.probes.slice_owner import read_owner, slice_problem
    from swarmdeck.sizes import format_size

    sites = slice_sites(config.memory.slice)
    site = chosen_site(sites)
    passed = "; ".join(
        f"{BACKEND_WORDS[s.backend]}: {s.reason}" for s in sites[: sites.index(site)]
    ) if site is not None else ""
    if site is None or site.path is None:
        why = "; ".join(f"{BACKEND_WORDS[s.backend]}: {s.reason}" for s in sites)
        return [Part(Mark.BROKEN, "cage", f"none can cage a job here ({why}); `swarmdeck run`"
                     " refuses (251): see docs/operators.md, Installing")]
    where = f" {site.placement}" if site.placement else ""
    chosen = f"{BACKEND_WORDS[site.backend]} at {site.path} ({where.strip() or 'chosen'})"
    parts = [Part(Mark.OK, "cage", chosen + (f"; not {passed}" if passed else ""))]
    total = mem_total()
    problem = reserve_problem(config, total) or slice_problem(site.path, ledger)
    if problem:
        parts.append(Part(Mark.BROKEN, "slice", problem))
        return parts
    owner = read_owner(site.path)
    cap = format_size(total - config.memory.reserve.resolve(total))
    rule = private_ledger_rule(config.memory.slice, os.path.dirname(ledger))
    if rule and (owner is None or owner.ledger != os.path.realpath(ledger)):
        parts.append(Part(Mark.ACTION, "slice", rule))
    elif owner is None:
        parts.append(Part(Mark.OK, "slice", f"not claimed yet: the first caged run claims it for"
                          f" this ledger ({ledger}) and caps it at {cap}"))
    elif owner.ledger == os.path.realpath(ledger):
        parts.append(Part(Mark.OK, "slice", f"belongs to this ledger ({owner.ledger}), capped at"
                          f" {format_size(owner.cap)}"))
    else:
        parts.append(Part(Mark.OK, "slice", f"the claim of the ledger {owner.ledger} has lapsed"
                          " (it is gone, the slice is empty): the next run here takes it"))
    return parts


def path_part() -> Part:
    """Whether `swarmdeck` is on PATH, for the person typing the commands the hooks suggest."""
    found = shutil.which("swarmdeck")
    if found:
        return Part(Mark.OK, "PATH", f"`swarmdeck` is {found}")
    return Part(Mark.ACTION, "PATH", "`swarmdeck` is not on PATH, so the commands the hooks and"
                " this screen suggest are not found: `make install-user` links it into"
                " ~/.local/bin")


def settings_files() -> list[Path]:
    """The settings files Claude Code reads hooks from: the user's, then this folder's."""
    here = Path.cwd() / ".claude"
    return [Path(paths.claude_dir()) / "settings.json", here / "settings.json",
            here / "settings.local.json"]


def hooks_part() -> Part:
    """Which settings files run swarmdeck's hooks, and whether the swarmdeck they start is there."""
    from swarmdeck.actions.hooks_install import is_ours, read_settings
    from swarmdeck.errors import SwarmdeckError

    having: list[str] = []
    gone: set[str] = set()
    unreadable: list[str] = []
    for path in settings_files():
        try:
            settings, _ = read_settings(path)
        except SwarmdeckError as error:
            unreadable.append(str(error))
            continue
        hooks = settings.get("hooks")
        ours = [
            handler
            for groups in (hooks.values() if isinstance(hooks, dict) else ())
            for group in (groups if isinstance(groups, list) else ())
            for handler in (group.get("hooks", ()) if isinstance(group, dict) else ())
            if is_ours(handler)
        ]
        if ours:
            having.append(str(path))
        for handler in ours:
            program = shlex.split(handler["command"])[0]
            if not os.access(shutil.which(program) or program, os.X_OK):
                gone.add(program)
    if gone:
        return Part(Mark.BROKEN, "hooks", f"{', '.join(having)} start {', '.join(sorted(gone))},"
                    " which is not there: every Bash call of every agent fails its hook; run"
                    " `swarmdeck hooks install` again")
    if unreadable:
        return Part(Mark.ACTION, "hooks", "; ".join(unreadable))
    if having:
        return Part(Mark.OK, "hooks", f"swarmdeck's hooks are in {', '.join(having)}")
    return Part(Mark.ACTION, "hooks", "no settings file has swarmdeck's hooks, so agents are not"
                " told the memory book before they run: `swarmdeck hooks install` (or"
                " `--project DIR`)")


def claude_part() -> Part:
    """The Claude Code folder and how many sessions it holds."""
    folder = Path(paths.claude_dir())
    projects = folder / "projects"
    if not folder.is_dir():
        return Part(Mark.ACTION, "Claude Code", f"no folder {folder}: the Agents panel stays empty"
                    " until Claude Code runs here as this user (CLAUDE_CONFIG_DIR names another)")
    try:
        sessions = sum(
            1
            for project in projects.iterdir() if project.is_dir()
            for entry in project.iterdir() if entry.suffix == ".jsonl" and entry.is_file()
        )
    except OSError:
        sessions = 0
    plural = "" if sessions == 1 else "s"
    return Part(Mark.OK, "Claude Code", f"{folder}: {sessions} session{plural} in {projects}")


def peer_parts(config: Config) -> list[Part]:
    """Each configured peer as `peer check` finds it."""
    if not config.hosts:
        return [Part(Mark.NONE, "peers", "none configured ([[hosts]] in the config adds one)")]
    from swarmdeck.actions.peer_run import check_peer
    from swarmdeck.errors import SwarmdeckError

    parts = []
    for host in config.hosts:
        name = f"peer {host.name}"
        try:
            report = check_peer(config, host.name)
        except SwarmdeckError as error:
            parts.append(Part(Mark.BROKEN, name, str(error)))
            continue
        facts = "; ".join(" ".join(line.split()) for line in report.lines)
        if report.problem:
            where = f"{host.address}:{host.port}"
            said = f"{report.problem} ({facts})" if facts else report.problem
            parts.append(Part(Mark.BROKEN, name, f"{where}: {said}"))
        else:
            parts.append(Part(Mark.OK, name, facts))
    return parts


def slurm_part(config: Config) -> Part:
    """The Slurm cluster, when one is configured."""
    if not config.slurm.enabled:
        return Part(Mark.NONE, "Slurm", "not enabled ([slurm] enabled = true reads a cluster)")
    from swarmdeck.probes.slurm import READ, read_cluster

    reading = read_cluster(config.slurm, {})
    if reading.state != READ:
        return Part(Mark.BROKEN, "Slurm", f"{reading.label}: not read: {reading.reason}")
    return Part(Mark.OK, "Slurm", f"{reading.label}: {len(reading.nodes)} nodes read")


def gpu_part(config: Config) -> Part:
    """NVML and the cards."""
    from swarmdeck.probes.gpu import READY, gpu_snapshot

    gpus = gpu_snapshot(config.gpu.allowlist)
    if gpus.state == READY:
        names = ", ".join(sorted({card.name for card in gpus.cards}))
        return Part(Mark.OK, "GPUs", f"NVML reads {gpus.summary()} ({names}), driver"
                    f" {gpus.driver_version}")
    return Part(Mark.NONE, "GPUs", gpus.summary() + " (GPU jobs cannot be placed here)")


def examine(config: Config, ledger: str) -> list[Part]:
    """Every part, in the order the screen shows them."""
    return [
        Part(Mark.OK, "state", f"the ledger is {ledger}"),
        *cage_parts(config, ledger),
        path_part(),
        hooks_part(),
        claude_part(),
        *peer_parts(config),
        slurm_part(config),
        gpu_part(config),
    ]


def screen(parts: list[Part]) -> list[str]:
    """The doctor's lines: a verdict, then one line per part, its name in a column."""
    broken = [part for part in parts if part.mark is Mark.BROKEN]
    todo = [part for part in parts if part.mark is Mark.ACTION]
    verdict = "not usable here" if broken else "usable here"
    counts = [f"{len(broken)} in the way"] if broken else []
    counts += [f"{len(todo)} to do"] if todo else []
    head = f"swarmdeck doctor: {verdict}" + (f" ({', '.join(counts)})" if counts else "")
    width = max(len(part.name) for part in parts)
    return [head, *(f"{part.mark.value} {part.name:<{width}}  {part.says}" for part in parts)]


def reasons(parts: list[Part]) -> str:
    """The one line saying why the host is not usable; "" when it is."""
    return "; ".join(f"{part.name}: {part.says}" for part in parts if part.mark is Mark.BROKEN)
