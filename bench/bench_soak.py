"""Whether the control room's memory stays flat over hours of a busy host (issue 36).

A scene of the benchmark's own: a cgroup v1 slice and a scratch state, config and Claude Code
folder (bench/scene.py); `--jobs` real `swarmdeck run -- sleep` jobs kept running, each ending
after one to three minutes and replaced by a new one (so the ledger keeps changing); and
`--sessions` demo Claude Code sessions (src/swarmdeck/demo/sessions.py: a live stand-in process
and transcripts whose background subagents start, call tools and finish, one step every
`--step` seconds).

Default: `swarmdeck ui` runs in a tmux pane (200×60) at its default 2 s refresh for
`--minutes`; its resident memory (VmRSS, with any children) is read every minute. The figure is
the end's reading over the reading at `--settle` minutes (goal: within 5 %).

`--trace`: the app in the pane runs with tracemalloc on (bench/traced_ui.py), and what grew
most since its first snapshot (at `--settle` minutes), by traceback, every `--every` minutes,
is printed at the end: what to look at when the ratio is over.

    .venv/bin/python bench/bench_soak.py [--minutes 120] [--jobs 20] [--sessions 10]
    .venv/bin/python bench/bench_soak.py --trace --minutes 20 --every 5
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from scene import (
    MIB,
    SWARMDECK,
    Home,
    load_average,
    make_slice,
    remove_slice,
    rss_bytes,
    scratch_home,
)
from swarmdeck.demo.sessions import API_TASKS, CAGE_TASKS, DemoSession, ScriptRunner, rounds

RESULTS = Path(__file__).resolve().parent / "results" / "app.md"
SECTION = "## Over hours: `bench/bench_soak.py`"
"""The heading of this benchmark's section of app.md; what follows it up to the next `## ` is
this benchmark's and is replaced by each run."""
HISTORY_MINUTES = 10
"""The app's default `ui.history_minutes`: its sparklines' rings fill for this long."""
JOB_SECONDS = (60, 180)
"""How long each job sleeps, drawn uniformly: a job ends and a new one starts every few
seconds with 20 running."""


class ChangingJobs:
    """`count` caged jobs kept running: each one that ends is replaced by a new one."""

    def __init__(self, home: Home, count: int) -> None:
        self.home = home
        self.count = count
        self.started = 0
        self._runners: list[subprocess.Popen[bytes]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="soak-jobs", daemon=True)
        self._random = random.Random(36)

    def _start_one(self) -> subprocess.Popen[bytes]:
        seconds = self._random.randint(*JOB_SECONDS)
        self.started += 1
        return subprocess.Popen(
            [SWARMDECK, "run", "--cap", "8M", "--wait", "60", "--label",
             f"soak-{self.started % 7}", "--", "sleep", str(seconds)],
            env=self.home.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True,
        )

    def _run(self) -> None:
        while not self._stop.wait(1.0):
            self._runners = [r for r in self._runners if r.poll() is None]
            while len(self._runners) < self.count and not self._stop.is_set():
                self._runners.append(self._start_one())
                self._stop.wait(0.2)

    def __enter__(self) -> ChangingJobs:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()
        for runner in self._runners:
            with contextlib.suppress(ProcessLookupError):
                runner.terminate()
        for runner in self._runners:
            runner.wait()


@contextlib.contextmanager
def changing_sessions(home: Home, count: int, step: float) -> Iterator[list[DemoSession]]:
    """`count` live demo sessions whose transcripts keep changing, until the block ends."""
    claude = Path(home.env["CLAUDE_CONFIG_DIR"])
    work = home.folder / "work"
    sessions = [DemoSession(claude, f"s{n}", work / f"s{n}") for n in range(count)]
    writer = ScriptRunner()
    try:
        for n, session in enumerate(sessions):
            session.start_process()
            tasks = API_TASKS if n % 2 == 0 else CAGE_TASKS
            writer.add(rounds(session, tasks, step, pause=step * 3), after=n * step / count)
        writer.start()
        yield sessions
    finally:
        writer.stop()
        for session in sessions:
            session.stop_process()


@contextlib.contextmanager
def soak_home(args: argparse.Namespace) -> Iterator[Home]:
    """The scratch home with its slice, jobs and sessions running; all removed afterwards."""
    slice_path = make_slice("bench-soak")
    ledgers: list[Path] = []
    try:
        with tempfile.TemporaryDirectory(prefix="swarmdeck-soak-") as tmp:
            home = scratch_home(Path(tmp), slice_path, slice_cap=1024 * MIB)
            ledgers.append(home.db)
            config = Path(home.env["SWARMDECK_CONFIG"])
            config.write_text(
                config.read_text() + f"\n[ui]\nrefresh_interval = {args.refresh}\n"
            )
            home.env["HOME"] = str(Path(tmp) / "home")
            Path(home.env["HOME"]).mkdir()
            with ChangingJobs(home, args.jobs), changing_sessions(home, args.sessions, args.step):
                yield home
    finally:
        remove_slice(slice_path, ledgers)


def tmux_app(
    home: Home, minutes: float, command: str = f"exec {SWARMDECK} ui"
) -> list[tuple[float, int | None]]:
    """`swarmdeck ui` (or `command`) in a pane of its own for `minutes`; (minutes since start,
    RSS) each minute and at the end."""
    session = f"swarmdeck-bench-soak-{os.getpid()}"
    tmux = ["tmux", "-L", session]
    env = dict(home.env, TERM="xterm-256color", LANG="C.UTF-8", LC_ALL="C.UTF-8")
    subprocess.run(
        [*tmux, "new-session", "-d", "-s", session, "-x", "200", "-y", "60", command],
        env=env, check=True,
    )
    readings: list[tuple[float, int | None]] = []
    try:
        pid = int(subprocess.run(
            [*tmux, "list-panes", "-t", session, "-F", "#{pane_pid}"],
            capture_output=True, text=True, check=True,
        ).stdout.split()[0])
        began = time.monotonic()
        while (elapsed := (time.monotonic() - began) / 60) < minutes:
            time.sleep(min(60.0, max(0.0, (minutes - elapsed) * 60)))
            reading = rss_bytes(pid)
            readings.append(((time.monotonic() - began) / 60, reading))
            print(f"{readings[-1][0]:6.1f} min  {mib(reading)}", flush=True)
            if reading is None:
                break
    finally:
        subprocess.run([*tmux, "kill-server"], check=False)
    return readings


def mib(value: int | None) -> str:
    return "gone" if value is None else f"{value / MIB:.1f}M"


def trace_app(home: Home, minutes: float, every: float, warm: float) -> None:
    """The app with tracemalloc (bench/traced_ui.py) in the pane; what grew most every `every`
    minutes since the first snapshot, `warm` minutes in, printed at the end."""
    out = home.folder / "trace.txt"
    home.env.update(
        SWARMDECK_TRACE_OUT=str(out), SWARMDECK_TRACE_WARM=str(warm * 60),
        SWARMDECK_TRACE_EVERY=str(every * 60),
    )
    tmux_app(home, minutes, f"exec {sys.executable} {Path(__file__).with_name('traced_ui.py')}")
    print(out.read_text() if out.exists() else "no snapshot was compared")


def write_section(text: str, path: Path = RESULTS) -> None:
    """Replace this benchmark's text in app.md, up to the next heading, or add it before
    bench_serve.py's section: the earlier runs' readings under its own headings stay."""
    before = path.read_text()
    if SECTION in before:
        head, _, rest = before.partition(SECTION)
        tail = rest[rest.index("\n#") + 1:] if "\n#" in rest else ""
    else:
        serve = before.find("## In a browser")
        head, tail = (before, "") if serve < 0 else (before[:serve], before[serve:])
    path.write_text(head.rstrip("\n") + "\n\n" + text + ("\n" + tail if tail else ""))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=120.0)
    parser.add_argument("--settle", type=float, default=2.0,
                        help="minutes before the first reading the ratio starts from")
    parser.add_argument("--jobs", type=int, default=20)
    parser.add_argument("--sessions", type=int, default=10)
    parser.add_argument("--step", type=float, default=2.0,
                        help="seconds between a demo session's transcript writes")
    parser.add_argument("--refresh", type=float, default=2.0)
    parser.add_argument("--trace", action="store_true")
    parser.add_argument("--every", type=float, default=5.0)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    # Stopped early (kill PID): the scene is still stopped and removed on the way out.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    load_before = load_average()
    started = time.strftime("%Y-%m-%d %H:%M")
    with soak_home(args) as home:
        if args.trace:
            trace_app(home, args.minutes, args.every, args.settle)
            return 0
        readings = tmux_app(home, args.minutes)
    load_after = load_average()
    settled = next((r for m, r in readings if m >= args.settle - 0.01), None)
    last_minute, last = readings[-1] if readings else (0.0, None)
    lines = [
        SECTION,
        "",
        f"Measured by `bench/bench_soak.py` on {platform.node()} ({os.cpu_count()} CPUs),"
        f" {started}, for {last_minute:.0f} min: `swarmdeck ui` in a tmux pane (200×60) at a"
        f" {args.refresh:g} s refresh, with {args.jobs} caged `swarmdeck run -- sleep` jobs kept"
        f" running (each ends after {JOB_SECONDS[0]}–{JOB_SECONDS[1]} s and a new one starts)"
        f" and {args.sessions} live demo Claude Code sessions whose background subagents start,"
        f" call tools and finish (a transcript write every {args.step:g} s per session). Load"
        f" average {load_before} before, {load_after} after. VmRSS of the app's process, read"
        " every minute:",
        "",
        "| minutes | VmRSS |",
        "| ---: | ---: |",
    ]
    shown = {round(m) for m, _ in readings if round(m) in (1, 2, 5, 10) or round(m) % 15 == 0}
    lines += [f"| {m:.0f} | {mib(r)} |" for m, r in readings if round(m) in shown]
    if readings and round(last_minute) not in shown:
        lines.append(f"| {last_minute:.0f} | {mib(last)} |")
    # The app's own rings (ui.history_minutes of readings) are full from then on.
    filled = next((r for m, r in readings if m >= HISTORY_MINUTES + args.settle - 0.01), None)
    if settled and last:
        grew = last / settled - 1
        lines += [
            "",
            f"- end / {args.settle:g} min: {last / settled:.3f}× ({grew * 100:+.1f} %; goal"
            f" within ±5 %): {'within' if abs(grew) <= 0.05 else 'over'}",
        ]
    if filled and last:
        lines.append(
            f"- end / {HISTORY_MINUTES + args.settle:g} min, once the app's {HISTORY_MINUTES} min"
            f" of history are held: {last / filled:.3f}× ({(last / filled - 1) * 100:+.1f} %)"
        )
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.no_write:
        write_section(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
