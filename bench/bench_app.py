"""What the control room costs to keep open, beside htop, btop and glances, measured in one run.

Each monitor runs in its own tmux pane of one detached session, all at a 2 s interval (the
control room's default refresh, `htop -d 20`, `glances -t 2`, btop's default 2000 ms). For each
phase the CPU seconds of each monitor's own process (all its threads, and any children) are
read from its stat line at the start and the end, over `--phase` seconds of wall time:
  1. idle: nothing else started by the benchmark;
  2. unsupervised: +1,000 sleeping processes outside any cage, which it must not pay for;
  3. loaded: the same +1,000 and 20 caged jobs (`swarmdeck run -- sleep`), which it supervises.
The three phases run twice, in that order, and each figure is the mean of its two phases: these
machines' speed drifts by tens of percent within minutes, and one idle phase before one loaded
one would take that drift for the control room's cost.
Goals (issue 13): the control room ≤ 0.5 % of a core idle; loaded ≤ htop's figure in the same
run and no more than 2× its own idle figure.

Resident memory (issue 36) is read beside the CPU at the end of every phase (VmRSS of the
monitor's process and its children), with a minimal Textual app with one DataTable
(bench/minimal_table.py) in a pane of its own as the yardstick. Goals: the control room ≤ 1.5×
the minimal app, and flat (within 5 %) from the first phase's end to the last.

htop, btop and glances are installed from Debian when missing (as root). Needs a writable
cgroup v1 memory hierarchy for the cages; builds its own slice and removes it.
Writes bench/results/app.md, keeping bench_serve.py's section at its end.

    .venv/bin/python bench/bench_app.py [--phase 30] [--jobs 20] [--extra 1000]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from bench_serve import SECTION as SERVE_SECTION
from bench_soak import SECTION as SOAK_SECTION
from scene import (
    caged_jobs,
    load_average,
    make_slice,
    remove_slice,
    rss_bytes,
    scratch_home,
    sleepers,
)
from swarmdeck.probes import procs

RESULTS = Path(__file__).resolve().parent / "results" / "app.md"
SWARMDECK = str(Path(sys.executable).parent / "swarmdeck")
DEBIAN_PACKAGES = ("htop", "btop", "glances")
WARM_UP = 8.0
"""Seconds every monitor gets to start and settle before a phase opens."""
CLK_TCK = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Monitor:
    """One monitor in its pane: its name, the command the pane runs, and its process."""

    name: str
    command: str
    pid: int = 0


def install_missing() -> None:
    missing = [name for name in DEBIAN_PACKAGES if shutil.which(name) is None]
    if not missing:
        return
    if os.geteuid() != 0:
        sys.exit(f"bench_app: {', '.join(missing)} missing: apt-get install -y {' '.join(missing)}")
    subprocess.run(["apt-get", "update", "-qq"], check=True)
    subprocess.run(
        ["apt-get", "install", "-y", "-qq", *missing], check=True,
        env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"),
    )


def cpu_seconds(pid: int) -> float:
    """CPU seconds of a process and its live descendants (utime + stime of each)."""
    table = procs.process_table()
    children: dict[int, list[int]] = {}
    for stat in table.values():
        children.setdefault(stat.ppid, []).append(stat.pid)
    total, todo = 0, [pid]
    while todo:
        current = todo.pop()
        stat = table.get(current)
        if stat is None:
            continue
        total += stat.utime + stat.stime
        todo += children.get(current, [])
    return total / CLK_TCK


@contextlib.contextmanager
def panes(monitors: list[Monitor], home_env: dict[str, str]) -> Iterator[list[Monitor]]:
    """A detached tmux session with one pane per monitor; the monitors with their pids."""
    session = f"swarmdeck-bench-app-{os.getpid()}"
    # A server of the benchmark's own: a running one would give the panes its environment.
    tmux = ["tmux", "-L", session]
    env = dict(home_env, TERM="xterm-256color", LANG="C.UTF-8", LC_ALL="C.UTF-8")
    subprocess.run(
        [*tmux, "new-session", "-d", "-s", session, "-x", "240", "-y", "80", monitors[0].command],
        env=env, check=True,
    )
    try:
        for monitor in monitors[1:]:
            subprocess.run([*tmux, "split-window", "-t", session, monitor.command], env=env,
                           check=True)
            subprocess.run([*tmux, "select-layout", "-t", session, "tiled"], check=True)
        listed = subprocess.run(
            [*tmux, "list-panes", "-t", session, "-F", "#{pane_index} #{pane_pid}"],
            capture_output=True, text=True, check=True,
        ).stdout.split("\n")
        pids = [int(line.split()[1]) for line in listed if line.strip()]
        yield [Monitor(m.name, m.command, pid) for m, pid in zip(monitors, pids, strict=True)]
    finally:
        subprocess.run([*tmux, "kill-server"], check=False)


def measure(monitors: list[Monitor], seconds: float) -> dict[str, float | None]:
    """Each monitor's share of one core over the next `seconds` (None if it is gone)."""
    start = {m.name: cpu_seconds(m.pid) for m in monitors}
    began = time.monotonic()
    time.sleep(seconds)
    wall = time.monotonic() - began
    out: dict[str, float | None] = {}
    for m in monitors:
        alive = procs.identity(m.pid) is not None
        out[m.name] = (cpu_seconds(m.pid) - start[m.name]) / wall if alive else None
    return out


Figures = dict[str, float | None]
ROUNDS = 2
"""How often the three phases run; each figure is the mean of its rounds."""


def mean_of(rounds: list[Figures]) -> Figures:
    """Each monitor's mean over the rounds (None if it was gone in any)."""
    out: Figures = {}
    for name in rounds[0]:
        values = [figures[name] for figures in rounds]
        out[name] = None if None in values else sum(values) / len(values)  # type: ignore[arg-type]
    return out


def percent(value: float | None) -> str:
    return "gone" if value is None else f"{value * 100:.2f} %"


def mib(value: int | None) -> str:
    return "gone" if value is None else f"{value / (1 << 20):.1f}M"


def rss_lines(monitors: list[Monitor], resident: list[dict[str, int | None]],
              ran: float) -> list[str]:
    """The resident-memory table (one row per phase end) and the two goals' verdicts."""
    phases = ("idle", "unsupervised", "loaded") * ROUNDS
    lines = [
        "## Resident memory",
        "",
        f"VmRSS of each monitor (and its children) at the end of each phase; {ran / 60:.1f} min"
        " from the first pane's start to the last reading.",
        "",
        "| phase end | " + " | ".join(m.name for m in monitors) + " |",
        "| --- | " + " | ".join("---:" for _ in monitors) + " |",
    ]
    for phase, reading in zip(phases, resident, strict=True):
        lines.append(f"| {phase} | " + " | ".join(mib(reading[m.name]) for m in monitors) + " |")
    first, last = resident[0], resident[-1]
    ours, minimal = last["swarmdeck"], last["textual minimal"]
    if ours is not None and minimal is not None and first["swarmdeck"]:
        grew = ours / first["swarmdeck"] - 1
        lines += [
            "",
            f"- swarmdeck / minimal Textual app, at the end: {ours / minimal:.2f}× (goal ≤ 1.5):"
            f" {'within' if ours <= 1.5 * minimal else 'over'}",
            f"- swarmdeck from the first phase's end to the last: {grew * 100:+.1f} % (goal"
            f" within ±5 %): {'within' if abs(grew) <= 0.05 else 'over'}",
        ]
    return [*lines, ""]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--phase", type=float, default=30.0)
    parser.add_argument("--jobs", type=int, default=20)
    parser.add_argument("--extra", type=int, default=1000)
    parser.add_argument("--write", type=Path, default=RESULTS)
    args = parser.parse_args()
    install_missing()
    load_before = load_average()
    slice_path = make_slice("bench-app")
    ledgers: list[Path] = []
    try:
        with tempfile.TemporaryDirectory(prefix="swarmdeck-bench-") as tmp:
            home = scratch_home(Path(tmp), slice_path)
            ledgers.append(home.db)
            config = Path(home.env["SWARMDECK_CONFIG"])
            config.write_text(config.read_text() + "\n[ui]\nrefresh_interval = 2.0\n")
            env = dict(home.env, HOME=str(Path(tmp) / "home"))
            Path(env["HOME"]).mkdir()
            monitors = [
                Monitor("swarmdeck", f"exec {SWARMDECK} ui"),
                Monitor("htop", "exec htop -d 20"),
                Monitor("btop", "exec btop --utf-force"),
                Monitor("glances", "exec glances -t 2"),
                Monitor("textual minimal",
                        f"exec {sys.executable} {Path(__file__).with_name('minimal_table.py')}"),
            ]
            rounds: list[tuple[Figures, Figures, Figures]] = []
            resident: list[dict[str, int | None]] = []
            with panes(monitors, env) as running:
                started = time.monotonic()
                time.sleep(WARM_UP)

                def rss_now() -> None:
                    resident.append({m.name: rss_bytes(m.pid) for m in running})

                for _ in range(ROUNDS):
                    idle_round = measure(running, args.phase)
                    rss_now()
                    with sleepers(args.extra):
                        time.sleep(WARM_UP)
                        unsupervised_round = measure(running, args.phase)
                        rss_now()
                        with caged_jobs(home, args.jobs):
                            time.sleep(WARM_UP)
                            processes = sum(1 for _ in procs.pids())
                            loaded_round = measure(running, args.phase)
                            rss_now()
                            load_loaded = load_average()
                    rounds.append((idle_round, unsupervised_round, loaded_round))
                    # The jobs' rows stay in the ledger as finished ones, as after any work.
                    time.sleep(WARM_UP)
                ran = time.monotonic() - started
            idle, unsupervised, loaded = (mean_of([r[i] for r in rounds]) for i in range(3))
    finally:
        remove_slice(slice_path, ledgers)
    ours_idle, ours_loaded, htop_loaded = idle["swarmdeck"], loaded["swarmdeck"], loaded["htop"]
    lines = [
        "# The control room's own CPU, beside htop, btop and glances",
        "",
        f"Measured by `bench/bench_app.py` on {platform.node()} ({os.cpu_count()} CPUs, kernel"
        f" {platform.release()}), {time.strftime('%Y-%m-%d %H:%M')}, in one run: every monitor"
        " in its own pane of one tmux session (240×80, tiled), all at a 2 s interval"
        " (swarmdeck ui at its default refresh, `htop -d 20`, `glances -t 2`, btop's default"
        f" 2000 ms); {args.phase:.0f} s per phase after {WARM_UP:.0f} s to settle, the three"
        f" phases {ROUNDS} times in turn and each figure the mean of its {ROUNDS}. The machine"
        f" is shared by other work: load average {load_before} before the run, {load_loaded}"
        " during the loaded phase; the figures are shares of one core (CPU seconds of the"
        " monitor's process and its children per wall second), so compare them within a row.",
        "An empty `$CLAUDE_CONFIG_DIR`; the jobs are real `swarmdeck run -- sleep` runners in"
        " a slice of the benchmark's own.",
        "",
        "| phase | swarmdeck | htop -d 20 | btop | glances -t 2 | textual minimal |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
        "| idle | " + " | ".join(percent(idle[m.name]) for m in monitors) + " |",
        f"| +{args.extra} sleeping processes, none supervised | "
        + " | ".join(percent(unsupervised[m.name]) for m in monitors) + " |",
        f"| +{args.extra} sleeping processes and {args.jobs} caged jobs ({processes} processes)"
        " | " + " | ".join(percent(loaded[m.name]) for m in monitors) + " |",
        "",
    ]
    if ours_idle is not None and ours_loaded is not None and htop_loaded is not None:
        lines += [
            f"- idle: {percent(ours_idle)} of a core (goal ≤ 0.5 %):"
            f" {'within' if ours_idle <= 0.005 else 'over'}",
            f"- loaded / htop loaded: {ours_loaded / htop_loaded:.2f}× (goal ≤ 1):"
            f" {'within' if ours_loaded <= htop_loaded else 'over'}",
            f"- loaded / idle: {ours_loaded / max(ours_idle, 1e-9):.2f}× (goal ≤ 2):"
            f" {'within' if ours_loaded <= 2 * ours_idle else 'over'}",
            f"- unsupervised / idle: {(unsupervised['swarmdeck'] or 0) / max(ours_idle, 1e-9):.2f}×"
            " (what 1,000 processes it does not supervise cost it)",
            "- by round (idle, unsupervised, loaded): " + "; ".join(
                ", ".join(percent(phase["swarmdeck"]) for phase in round_) for round_ in rounds
            ),
            "",
        ]
    lines += rss_lines(monitors, resident, ran)
    args.write.parent.mkdir(parents=True, exist_ok=True)
    # bench_soak.py's section (memory over hours) and bench_serve.py's (the browser viewers'
    # cost) follow; they are kept as they were.
    before = args.write.read_text() if args.write.exists() else ""
    starts = [before.index(s) for s in (SOAK_SECTION, SERVE_SECTION) if s in before]
    kept = before[min(starts):] if starts else ""
    args.write.write_text("\n".join(lines) + ("\n" + kept if kept else ""))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
