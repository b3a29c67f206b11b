"""What one idle browser viewer of `swarmdeck serve` costs, beside the terminal control room.

In one run, on one scratch home and at the default 2 s refresh: `swarmdeck ui` in a tmux pane
(155×50) and `swarmdeck serve` with headless Chromium pages open on it (1400×900 px, 155×50
cells). Each phase reads, from stat lines at its start and end over `--phase` seconds of wall
time, the CPU seconds of: the terminal app; serve's own process (its one probe and the web
server); each browser's app process (textual-serve starts one per page). RSS is read at the end
of each phase. The phases, one viewer then two, run `--rounds` times in turn; each figure is the
mean of its rounds; a third phase, one viewer again with `--jobs` caged jobs running (real
`swarmdeck run -- sleep` runners), shows where a probe's work goes: to serve, not the viewer.
The browser itself is left out: it runs on the person's laptop.

Writes the "In a browser" section of bench/results/app.md (bench_app.py keeps it).

    .venv/bin/python bench/bench_serve.py [--phase 30] [--rounds 2] [--jobs 20]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from scene import caged_jobs, load_average, make_slice, remove_slice, scratch_home, tree
from swarmdeck.probes import procs
from swarmdeck.serve.headless import chromium

RESULTS = Path(__file__).resolve().parent / "results" / "app.md"
SECTION = "## In a browser: `swarmdeck serve`"
"""The heading of this benchmark's part of app.md; bench_app.py keeps what follows it."""
SWARMDECK = str(Path(sys.executable).parent / "swarmdeck")
WARM_UP = 8.0
CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")


def _table() -> dict[int, procs.StatLine]:
    return procs.process_table()


def cpu(pids: list[int], table: dict[int, procs.StatLine]) -> float:
    return sum(table[p].utime + table[p].stime for p in pids if p in table) / CLK_TCK


def rss_mib(pids: list[int], table: dict[int, procs.StatLine]) -> float:
    return sum(table[p].rss_pages for p in pids if p in table) * PAGE / (1 << 20)


def viewers(serve_pid: int, table: dict[int, procs.StatLine]) -> list[list[int]]:
    """Each browser's app: the process tree of each child of serve."""
    return [tree(stat.pid, table) for stat in table.values() if stat.ppid == serve_pid]


@contextlib.contextmanager
def terminal_app(env: dict[str, str]) -> Iterator[int]:
    """`swarmdeck ui` in a detached tmux pane of the benchmark's own server; its pane's pid."""
    session = f"swarmdeck-bench-serve-{os.getpid()}"
    tmux = ["tmux", "-L", session]
    env = dict(env, TERM="xterm-256color", LANG="C.UTF-8", LC_ALL="C.UTF-8")
    subprocess.run([*tmux, "new-session", "-d", "-s", session, "-x", "155", "-y", "50",
                    f"exec {SWARMDECK} ui"], env=env, check=True)
    try:
        listed = subprocess.run([*tmux, "list-panes", "-t", session, "-F", "#{pane_pid}"],
                                capture_output=True, text=True, check=True).stdout
        yield int(listed.split()[0])
    finally:
        subprocess.run([*tmux, "kill-server"], check=False)


@contextlib.contextmanager
def served(env: dict[str, str]) -> Iterator[tuple[int, str]]:
    """`swarmdeck serve --port 0`: its pid and the URL it printed."""
    server = subprocess.Popen([SWARMDECK, "serve", "--port", "0"], env=env,
                              stdout=subprocess.PIPE, text=True, start_new_session=True)
    assert server.stdout is not None
    try:
        url = next(line.split("open ", 1)[1].strip() for line in server.stdout
                   if "open http://" in line)
        yield server.pid, url
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)


Figures = dict[str, float]


def measure(ui: int, serve: int, seconds: float) -> Figures:
    """CPU shares (of one core) and RSS (MiB) over the next `seconds`."""
    before = _table()
    ui_tree, apps = tree(ui, before), viewers(serve, before)
    start = (cpu(ui_tree, before), cpu([serve], before), [cpu(app, before) for app in apps])
    began = time.monotonic()
    time.sleep(seconds)
    wall = time.monotonic() - began
    after = _table()
    shares = [(cpu(app, after) - then) / wall for app, then in zip(apps, start[2], strict=True)]
    return {
        "ui": (cpu(ui_tree, after) - start[0]) / wall,
        "serve": (cpu([serve], after) - start[1]) / wall,
        "viewer": sum(shares) / len(shares),
        "viewers": sum(shares),
        "ui_rss": rss_mib(ui_tree, after),
        "serve_rss": rss_mib([serve], after),
        "viewer_rss": sum(rss_mib(app, after) for app in apps) / len(apps),
    }


def mean(rounds: list[Figures]) -> Figures:
    return {key: sum(r[key] for r in rounds) / len(rounds) for key in rounds[0]}


def pct(value: float) -> str:
    return f"{value * 100:.2f} %"


def write_section(lines: list[str], path: Path) -> None:
    """Put this benchmark's section at the end of app.md, in place of the one there."""
    text = path.read_text() if path.exists() else ""
    if SECTION in text:
        text = text[: text.index(SECTION)]
    path.write_text(text.rstrip("\n") + "\n\n" + "\n".join(lines))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--phase", type=float, default=30.0)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--jobs", type=int, default=20)
    parser.add_argument("--write", type=Path, default=RESULTS)
    args = parser.parse_args()
    load_before = load_average()
    slice_path = make_slice("bench-serve")
    one: list[Figures] = []
    two: list[Figures] = []
    loaded: list[Figures] = []
    ledgers: list[Path] = []
    try:
        with tempfile.TemporaryDirectory(prefix="swarmdeck-bench-") as tmp:
            home = scratch_home(Path(tmp), slice_path)
            ledgers.append(home.db)
            env = dict(home.env, HOME=str(Path(tmp) / "home"))
            Path(env["HOME"]).mkdir()
            with terminal_app(env) as ui, served(env) as (serve, url), chromium() as browser:
                first = browser.new_page()
                first.goto(url)
                for _ in range(args.rounds):
                    time.sleep(WARM_UP)
                    one.append(measure(ui, serve, args.phase))
                    second = browser.new_page()
                    second.goto(url)
                    time.sleep(WARM_UP)
                    two.append(measure(ui, serve, args.phase))
                    second.close()
                    with caged_jobs(home, args.jobs):
                        time.sleep(WARM_UP)
                        loaded.append(measure(ui, serve, args.phase))
                load_during = load_average()
    finally:
        remove_slice(slice_path, ledgers)
    a, b, c = mean(one), mean(two), mean(loaded)
    lines = [
        SECTION,
        "",
        f"Measured by `bench/bench_serve.py` on {platform.node()} ({os.cpu_count()} CPUs),"
        f" {time.strftime('%Y-%m-%d %H:%M')}, in one run: `swarmdeck ui` in a tmux pane"
        " (155×50) beside `swarmdeck serve` with idle headless Chromium pages on it (1400×900"
        " px, 155×50 cells), all at the default 2 s refresh on an empty scratch home;"
        f" {args.phase:.0f} s per phase after {WARM_UP:.0f} s to settle, one viewer, two, then"
        f" one with {args.jobs} caged jobs, {args.rounds} times in turn, each figure the mean of"
        " its rounds. Load average"
        f" {load_before} before, {load_during} after. CPU is a share of one core; the browser"
        " itself (on the person's laptop) is not counted.",
        "",
        "| phase | terminal app | serve (its one probe, web server) | each browser's app |"
        " all viewers |",
        "| --- | ---: | ---: | ---: | ---: |",
        f"| one idle viewer | {pct(a['ui'])} | {pct(a['serve'])} | {pct(a['viewer'])} |"
        f" {pct(a['viewers'])} |",
        f"| two idle viewers | {pct(b['ui'])} | {pct(b['serve'])} | {pct(b['viewer'])} |"
        f" {pct(b['viewers'])} |",
        f"| one viewer, {args.jobs} caged jobs running | {pct(c['ui'])} | {pct(c['serve'])} |"
        f" {pct(c['viewer'])} | {pct(c['viewers'])} |",
        "",
        f"- RSS: terminal app {a['ui_rss']:.0f} MiB; serve {a['serve_rss']:.0f} MiB; each"
        f" browser's app {a['viewer_rss']:.0f} MiB",
        f"- one idle viewer (serve + its app) / terminal app:"
        f" {(a['serve'] + a['viewers']) / max(a['ui'], 1e-9):.2f}× CPU",
        f"- a second viewer adds {pct(b['serve'] + b['viewers'] - a['serve'] - a['viewers'])}"
        f" of a core (serve's own share: {pct(a['serve'])} with one, {pct(b['serve'])} with"
        " two: the probe is not doubled)",
        f"- with {args.jobs} caged jobs the terminal app goes from {pct(a['ui'])} to"
        f" {pct(c['ui'])}, serve from {pct(a['serve'])} to {pct(c['serve'])}, a viewer from"
        f" {pct(a['viewer'])} to {pct(c['viewer'])}",
        "- by round (one viewer, two viewers, loaded; serve + all viewers): " + "; ".join(
            f"{pct(x['serve'] + x['viewers'])}, {pct(y['serve'] + y['viewers'])},"
            f" {pct(z['serve'] + z['viewers'])}"
            for x, y, z in zip(one, two, loaded, strict=True)
        ),
        "",
    ]
    args.write.parent.mkdir(parents=True, exist_ok=True)
    write_section(lines, args.write)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
