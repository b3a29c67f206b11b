"""The reminder added before a heavy Bash command: the resource table, this command's history,
where it can run, and the exact `swarmdeck run …` line to use.

It never denies: the agent keeps its decision, now with the facts a prompt cannot give it. The
booking and the admission test are the runner's own rules (actions/booking.py), so "can run
here" means the runner would admit it now.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from swarmdeck.actions.oom import reached_its_cap
from swarmdeck.durations import runtime_text
from swarmdeck.hooks.classify import HeavyMatch
from swarmdeck.hooks.payload import HookInput
from swarmdeck.hooks.resources import HostFacts, local_facts, peer_facts
from swarmdeck.sizes import format_size

if TYPE_CHECKING:
    from swarmdeck.actions.booking import Booking
    from swarmdeck.config import Config
    from swarmdeck.state import StateStore

@dataclass(frozen=True)
class LastRun:
    """The newest recorded run of this workload."""

    peak: int
    duration: float | None
    outcome: str | None
    hit_ceiling: bool
    runs: int


@dataclass(frozen=True)
class Verdict:
    """Where the command can run now, and the line that runs it there."""

    text: str
    line: str


def reminder_text(hook: HookInput, command: str, match: HeavyMatch) -> str:
    from swarmdeck.config import load_config
    from swarmdeck.state import StateStore

    config = load_config()
    store = StateStore.open_default(verify=False)
    try:
        return _text(config, store, hook, command, match)
    finally:
        store.close()


def _text(
    config: Config, store: StateStore, hook: HookInput, command: str, match: HeavyMatch
) -> str:
    from swarmdeck.hooks.guard_table import heavy_threads
    from swarmdeck.hooks.guards import run_argv, short
    from swarmdeck.hooks.shell_parse import caged_argv, parse

    cwd = _cwd(hook.cwd)
    facts = parse(command, hook.cwd)
    top = [item for item in facts.commands if not item.via]
    # One caged simple command (`swarmdeck run … -- CMD`): its CMD, as the runner gets it.
    inner = caged_argv(_words(command)) if len(top) == 1 and top[0].caged else None
    argv = inner if inner is not None else run_argv(command, facts)
    declared = _declared_cap(command) if inner is not None else None
    hosts = [local_facts(config, store), *peer_facts(config)]
    lines = [f"swarmdeck: `{short(command)}` is a heavy command ({match.label}). Resources now:"]
    lines += [f"- {host.row()}" for host in hosts]
    booking, history, problem = _booking(config, store, argv, cwd, declared, hosts[0])
    lines.append(_history_line(history, booking, problem))
    threads = heavy_threads(config)
    lines.append(f"Threads: a run without --threads declares this host's {threads} heavy"
                 " threads; give --threads N if it uses fewer.")
    if booking is None:
        lines.append("Conclusion: cannot tell (memory figures not read).")
        return "\n".join(lines)
    verdict = decide(booking, hosts, command, argv, match.label, inner is not None)
    lines.append(f"Conclusion: {verdict.text}.")
    lines.append(verdict.line)
    return "\n".join(lines)


def _cwd(cwd: str | None) -> Path:
    if cwd and os.path.isdir(cwd):
        return Path(cwd)
    return Path.cwd()


def _words(command: str) -> list[str]:
    try:
        return shlex.split(command)
    except ValueError:
        return []


def _declared_cap(command: str) -> int | None:
    """`--cap SIZE` of a command that already runs under `swarmdeck run`."""
    from swarmdeck.errors import SwarmdeckError
    from swarmdeck.probes.host import mem_total
    from swarmdeck.sizes import SizeSpec

    words = command.split()
    for index, word in enumerate(words[:-1]):
        if word == "--":
            return None
        if word == "--cap":
            try:
                return SizeSpec.parse(words[index + 1]).resolve(mem_total())
            except (ValueError, SwarmdeckError):
                return None
    return None


def _booking(
    config: Config,
    store: StateStore,
    argv: list[str],
    cwd: Path,
    declared: int | None,
    local: HostFacts,
) -> tuple[Booking | None, LastRun | None, str]:
    from swarmdeck.actions.booking import decide_booking
    from swarmdeck.actions.fingerprint import fingerprint
    from swarmdeck.actions.jobrecord import past_runs
    from swarmdeck.probes.host import mem_total

    print_ = fingerprint(argv, cwd)
    history = last_run(store, print_)
    total = mem_total()
    slice_cap = local.slice_cap
    if slice_cap is None:
        return None, history, "memory book not read"
    booking = decide_booking(
        past_runs(store, print_),
        declared_cap=declared,
        default_prediction=config.memory.default_prediction.resolve(total),
        cap_factor=config.memory.cap_factor,
        unbounded=False,
        slice_cap=slice_cap,
    )
    return booking, history, ""


def last_run(store: StateStore, fingerprint: str) -> LastRun | None:
    """The newest recorded run of the workload, and how many runs are recorded."""
    from swarmdeck.probes.peaks import workload_history

    history = workload_history(store, fingerprint, 1)
    last = history.last
    if last is None:
        return None
    return LastRun(
        peak=last.peak,
        duration=last.duration,
        outcome=last.outcome,
        hit_ceiling=last.hit_ceiling,
        runs=history.recorded,
    )


def _history_line(history: LastRun | None, booking: Booking | None, problem: str) -> str:
    books = f"; it would book {format_size(booking.booked)}" if booking else f"; {problem}"
    if history is None:
        return f"This command: no run recorded yet{books} ({_via(booking)})."
    took = f" in {runtime_text(history.duration)}" if history.duration is not None else ""
    ceiling = (", hit its memory ceiling"
               if reached_its_cap(history.hit_ceiling, history.outcome) else "")
    outcome = history.outcome or "unknown"
    runs = f"{history.runs} run{'s' if history.runs != 1 else ''} recorded"
    return (
        f"This command: last run peaked at {format_size(history.peak)}{took}, "
        f"outcome {outcome}{ceiling} ({runs}){books}."
    )


def _via(booking: Booking | None) -> str:
    if booking is None:
        return "booking unknown"
    return {"cap": "its --cap", "default": "the default prediction"}.get(
        booking.via.value, booking.via.value
    )


def decide(
    booking: Booking,
    hosts: list[HostFacts],
    command: str,
    argv: list[str],
    label: str,
    already_caged: bool,
) -> Verdict:
    """Here if the book has room, else the first peer with room, else why not: this host's
    cage problem (the runner would refuse), or by how much it is short."""
    local, peers = hosts[0], hosts[1:]
    need = booking.booked
    if local.can_cage and local.memory_room is not None and need <= local.memory_room:
        busy = saturation(local)
        if already_caged:
            line = "It already runs under swarmdeck; run it as it is."
        else:
            line = "Run it as: " + run_line(argv, label, booking)
        if not busy:
            return Verdict("can run here", line)
        idle = next((peer for peer in peers if peer.can_cage and not saturation(peer)
                     and peer.memory_room is not None and need <= peer.memory_room), None)
        elsewhere = (
            f"; or in a checkout on {idle.name} ({_load(idle)}) as: "
            + run_line(argv, label, booking, "swarmdeck")
        ) if idle is not None and not already_caged else ""
        return Verdict(
            f"can run here, but its cores are saturated ({busy})",
            f"It shares them with what runs now and runs slower. {line}{elsewhere}",
        )
    for peer in peers:
        if peer.can_cage and peer.memory_room is not None and need <= peer.memory_room:
            if local.cage_problem:
                return Verdict(
                    f"can run on {peer.name}",
                    f"Not here ({local.cage_problem}). Run it in a checkout on {peer.name} as: "
                    + run_line(argv, label, booking, "swarmdeck") + ".",
                )
            return Verdict(
                f"can run on {peer.name}",
                f"No room here now. Run it in a checkout on {peer.name} as: "
                + run_line(argv, label, booking, "swarmdeck")
                + "; or queue it here with the same line (it waits for room).",
            )
    if local.cage_problem:
        return Verdict(
            f"cannot run here: {local.cage_problem}",
            "swarmdeck run refuses it here (exit 251) until that is fixed.",
        )
    rooms = [h.memory_room for h in hosts if h.readable and h.memory_room is not None]
    short = need - max(rooms, default=0)
    caps = [h.slice_cap for h in hosts if h.readable and h.slice_cap is not None]
    text = f"cannot run: short by {format_size(max(short, 0))}"
    if caps and need > max(caps):
        text += f" (it books {format_size(need)}, more than any host's slice: never admitted)"
        return Verdict(text, "Make it smaller (fewer workers, a smaller test selection).")
    return Verdict(
        text,
        "Wait for running jobs to finish, or queue it: " + run_line(argv, label, booking),
    )


def _load(host: HostFacts) -> str:
    figures = host.figures
    return f"load {figures.load[0]:.2f} on {figures.cores} cores"


def saturation(host: HostFacts) -> str:
    """"load 7.49 on 2 cores" when the host's one-minute load is above its cores (runnable
    threads already wait for a core); "" when it is not, or was not read."""
    figures = host.figures
    if not figures.load or not figures.cores or figures.load[0] <= figures.cores:
        return ""
    return _load(host)


def run_line(argv: list[str], label: str, booking: Booking, command: str | None = None) -> str:
    """The line that runs `argv` under swarmdeck; `command` defaults to this host's swarmdeck,
    by the absolute path `hooks install` wrote into settings.json (an agent's PATH may lack it)."""
    from swarmdeck.actions.hooks_install import swarmdeck_executable

    program = command if command is not None else shlex.quote(swarmdeck_executable())
    return program + " run" + _options(label, booking) + " -- " + _join(argv)


def _options(label: str, booking: Booking) -> str:
    cap = f" --cap {format_size(booking.cap)}" if booking.via.value != "default" else ""
    return f" --label {shlex.quote(label)}{cap}"


def _join(argv: list[str]) -> str:
    return shlex.join(argv)
