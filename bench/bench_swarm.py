"""A swarm's day: how close each way of running the same jobs comes to the memory limit.

Each trace is a set of real processes that ramp up to a peak and hold it, all submitted at
once to a 3 GiB slice. Every job declares a `--cap` of 2–6× its real peak (never over 90 % of
the slice), as agents' caps are fiction. The traces are the size of issue 34's measurement:
30 jobs each, peaks of 120–1,300 MiB held about 4–14 s, so a day's bound is 20–50 s. Smaller
days (16 jobs of 2–6 s) measured the fixed costs more than the queue: the runners'
interpreters starting at once on a few shared cores (1–8 s before the first ledger row) and
the tail of a burst's order do not grow with the day, and were 10–30 % of its makespan.
Rows, each on the same trace:

- all at once in one cgroup capped at the slice (what running everything does);
- Slurm on the single-node test cluster (node memory = the slice, 64 CPUs so cores never limit,
  backfill every second) with `--mem=<cap>`, and with `--mem=<true peak × 1.1>`;
- `swarmdeck run` with no history (first day) and with the first day's history (second day;
  the drifting trace has a third day, its peaks grow each day).

Figures: makespan / bound, where bound = max(Σ peak × seconds / slice, longest job). Two
bounds: "as run" takes each job's seconds as it logged them in that row (on a loaded machine
jobs that run beside many others take longer: the CPU, not the memory, is then the limit, and
the memory scheduler is judged against the memory limit), "alone" takes its ramp and hold
plus the start cost of one job alone. Utilisation = Σ peak × seconds as run / (slice ×
makespan); jobs lost = ended 250, 254 or killed by the OOM killer. A job swarmdeck lost is
run again at once (what its agent would do), and the makespan includes the rerun; the naive
row cannot be finished that way and shows no ratio.

Needs root (cgroup v1) and, for the Slurm rows, the Slurm/munge/MariaDB binaries (bash .ci/run
installs them; without them those rows say why). Adds its run at the end of
bench/results/swarm.md (`--out`): the rounds recorded there are never written over.

    .venv/bin/python bench/bench_swarm.py [--traces bimodal,heavy-tail,family,drifting]
                                          [--no-slurm] [--scale 1.0]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import random
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "slurm"))

SWARMDECK = str(Path(sys.executable).parent / "swarmdeck")
RESULTS = HERE / "results" / "swarm.md"
TITLE = "# A swarm's day: makespan against the memory limit"
MIB = 1 << 20
SLICE_MIB = 3072
RAMP = 0.5
"""Seconds each job takes to reach its peak (in 8 steps)."""
LOST_CODES = (250, 254, 255)
V1_MEMORY = Path("/sys/fs/cgroup/memory")

JOB = r'''
import json, os, sys, time
began = time.time()
key = " ".join(sys.argv[1:])
plan = json.load(open(os.environ["SWARM_BENCH_PLAN"]))[key]
n = int(plan["peak"] * 1048576)
steps = 8
held = []
for _ in range(steps):
    chunk = bytearray(n // steps)
    chunk[::4096] = b"\1" * len(range(0, len(chunk), 4096))
    held.append(chunk)
    time.sleep(plan["ramp"] / steps)
time.sleep(plan["hold"])
with open(os.environ["SWARM_BENCH_LOG"], "a") as log:
    log.write(f"{key}\t{time.time() - began}\n")
'''
"""The job: its peak, ramp and hold come from the plan file, not its arguments, so the same
command (the same workload to swarmdeck) can grow from one day to the next."""


@dataclass
class Job:
    words: list[str]
    peak: float
    """MiB it really reaches."""
    hold: float
    cap: int
    """MiB it declares."""

    @property
    def key(self) -> str:
        return " ".join(self.words)


@dataclass
class Row:
    name: str
    makespan: float | None
    lost: int
    note: str = ""
    ran: dict[str, float] = field(default_factory=dict)
    """Seconds each job ran (from its own log line), its last run where it ran twice."""
    wall: tuple[float, float] = (0.0, 0.0)
    """The row's begin and end by the wall clock (the ledger's clock): bench/swarm_gap.py
    splits the time outside the ledger's rows from the time inside."""


def ran_for(log: Path) -> dict[str, float]:
    """What the jobs logged: each job's seconds from its start to its end."""
    seconds: dict[str, float] = {}
    if log.exists():
        for line in log.read_text().splitlines():
            key, _, took = line.rpartition("\t")
            seconds[key] = float(took)
    return seconds


@dataclass
class TraceResult:
    name: str
    jobs: list[Job]
    growth: float
    nominal: float
    """The bound from each job's ramp and hold and one job's start cost alone."""
    rows: list[Row] = field(default_factory=list)

    def measured(self, row: Row) -> tuple[float, float] | None:
        """(bound, Σ peak × seconds) from the seconds the jobs ran in this row; None when
        some job never finished there."""
        if any(job.key not in row.ran for job in self.jobs):
            return None
        seconds = [row.ran[job.key] for job in self.jobs]
        area = sum(j.peak * self.growth * s for j, s in zip(self.jobs, seconds, strict=True))
        return max(area / SLICE_MIB, max(seconds)), area


def caps(rng: random.Random, peak: float) -> int:
    return int(min(SLICE_MIB * 0.9, peak * rng.uniform(2.0, 6.0)))


JOBS = 30
"""Jobs per trace, as in issue 34's measurement."""
HOLD = (4.0, 14.0)
"""The least and the most seconds a job holds its peak (before --scale)."""


def trace(name: str, rng: random.Random, scale: float) -> list[Job]:
    """The trace's jobs (the drifting one as on its first day)."""
    least, most = HOLD
    jobs: list[Job] = []
    if name == "bimodal":
        for i in range(JOBS):
            peak = rng.uniform(900, 1300) if i % 5 in (0, 3) else rng.uniform(120, 300)
            jobs.append(Job([f"bimodal-{i:02d}"], peak, rng.uniform(least, most) * scale, 0))
    elif name == "heavy-tail":
        for i in range(JOBS):
            hold = min(most, least * rng.paretovariate(1.5))
            jobs.append(Job([f"tail-{i:02d}"], rng.uniform(150, 700), hold * scale, 0))
    elif name == "family":
        for i in range(JOBS):
            jobs.append(Job(["suite", f"tests/case_{i:02d}"], rng.uniform(200, 500),
                            rng.uniform(least, least + (most - least) / 2) * scale, 0))
    elif name == "drifting":
        for i in range(JOBS):
            jobs.append(Job([f"drift-{i:02d}"], rng.uniform(300, 800),
                            rng.uniform(least, most - 2) * scale, 0))
    else:
        sys.exit(f"bench_swarm: no trace {name!r}")
    for job in jobs:
        job.cap = caps(rng, job.peak)
    return jobs


def write_plan(path: Path, jobs: list[Job], growth: float = 1.0) -> None:
    path.write_text(json.dumps({
        job.key: {"peak": job.peak * growth, "ramp": RAMP, "hold": job.hold} for job in jobs
    }))


def job_argv(script: Path, job: Job) -> list[str]:
    return [sys.executable, "-S", str(script), *job.words]


def start_cost(script: Path, plan: Path, env: dict[str, str]) -> float:
    """Seconds one tiny job takes alone beyond its ramp and hold: the start every job pays."""
    probe = Job(["probe"], 8, 0.0, 16)
    write_plan(plan, [probe])
    took = []
    for _ in range(3):
        began = time.monotonic()
        subprocess.run(job_argv(script, probe), env=env, check=True)
        took.append(time.monotonic() - began - RAMP)
    return max(0.0, min(took))


def bound_of(jobs: list[Job], growth: float, cost: float) -> float:
    """The bound from the jobs' nominal seconds: ramp, hold and the start cost."""
    seconds = [RAMP + job.hold + cost for job in jobs]
    area = sum(job.peak * growth * s for job, s in zip(jobs, seconds, strict=True))
    return max(area / SLICE_MIB, max(seconds))


def logged(env: dict[str, str], log: Path) -> dict[str, str]:
    """`env` with the jobs' log (where each writes how long it ran) at `log`, emptied."""
    log.unlink(missing_ok=True)
    return {**env, "SWARM_BENCH_LOG": str(log)}


# ---- all at once in one cgroup ----------------------------------------------------------------

def naive(script: Path, jobs: list[Job], env: dict[str, str], slice_path: Path) -> Row:
    group = slice_path / "naive"
    group.mkdir()
    (group / "memory.limit_in_bytes").write_text(str(SLICE_MIB * MIB))
    try:
        began = time.monotonic()
        procs = [
            subprocess.Popen(
                ["sh", "-c", f'echo $$ > {group}/cgroup.procs && exec "$@"', "sh",
                 *job_argv(script, job)], env=env,
            )
            for job in jobs
        ]
        codes = [proc.wait() for proc in procs]
        took = time.monotonic() - began
    finally:
        remove_group(group)
    killed = sum(1 for code in codes if code == -9 or code == 137)
    return Row("all at once in one cgroup", took, killed, "not finished: killed jobs lost")


def remove_group(group: Path) -> None:
    for _ in range(200):
        try:
            group.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            for pid in (group / "cgroup.procs").read_text().split():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(pid), 9)
            time.sleep(0.05)


# ---- swarmdeck --------------------------------------------------------------------------------

def swarmdeck_day(
    script: Path, jobs: list[Job], env: dict[str, str], work: Path, name: str
) -> Row:
    """Every job through `swarmdeck run --cap`, all started at once; a lost one at once again."""
    began, wall = time.monotonic(), time.time()
    running: dict[str, tuple[subprocess.Popen[bytes], Job]] = {}
    lost = 0
    tries = {job.key: 0 for job in jobs}

    def start(job: Job) -> None:
        tries[job.key] += 1
        argv = [SWARMDECK, "run", "--cap", f"{job.cap}M", "--wait", "3600", "--label",
                job.key, "--", *job_argv(script, job)]
        running[job.key] = (subprocess.Popen(argv, env=env, cwd=work,
                                             stderr=subprocess.DEVNULL), job)

    for job in jobs:
        start(job)
    while running:
        for key, (proc, job) in list(running.items()):
            code = proc.poll()
            if code is None:
                continue
            del running[key]
            if code in LOST_CODES:
                lost += 1
                if tries[key] < 4:
                    start(job)
            elif code != 0:
                sys.exit(f"bench_swarm: {key} exited {code} under swarmdeck")
        time.sleep(0.02)
    took = time.monotonic() - began
    return Row(name, took, lost, wall=(wall, wall + took))


# ---- Slurm ------------------------------------------------------------------------------------

def slurm_row(
    cluster, script: Path, jobs: list[Job], env: dict[str, str], out: Path, name: str,
    mem: dict[str, int],
) -> Row:
    client = {**cluster.client_env(), **env}
    began = time.monotonic()
    ids = []
    for job in jobs:
        argv = ["sbatch", "--parsable", f"--mem={mem[job.key]}M", f"--output={out}/%j.out",
                "--wrap", " ".join(job_argv(script, job))]
        done = subprocess.run(argv, env=client, capture_output=True, text=True, check=True)
        ids.append(done.stdout.strip().split(";")[0])
    while True:
        queued = subprocess.run(["squeue", "-h", "-o", "%i", "-j", ",".join(ids)], env=client,
                                capture_output=True, text=True).stdout.split()
        if not queued:
            break
        time.sleep(0.1)
    took = time.monotonic() - began
    states = subprocess.run(
        ["sacct", "-n", "-X", "-P", "-o", "State", "-j", ",".join(ids)], env=client,
        capture_output=True, text=True,
    ).stdout.split()
    lost = sum(1 for state in states if state.startswith(("OUT_OF_ME", "FAILED")))
    return Row(name, took, lost)


# ---- the run ----------------------------------------------------------------------------------

def run_trace(
    name: str, args: argparse.Namespace, root: Path, slice_path: Path, cluster, cost: float,
    script: Path, base_env: dict[str, str],
) -> list[TraceResult]:
    rng = random.Random(f"swarm-{name}")
    jobs = trace(name, rng, args.scale)
    plan = root / f"plan-{name}.json"
    env = {**base_env, "SWARM_BENCH_PLAN": str(plan)}
    work = root / f"work-{name}"
    work.mkdir()
    growths = [1.0, 1.15, 1.3] if name == "drifting" else [1.0, 1.0]
    results = []
    write_plan(plan, jobs)
    first = TraceResult(name, jobs, 1.0, bound_of(jobs, 1.0, cost))
    log = root / f"log-{name}"
    first.rows.append(naive(script, jobs, logged(env, log), slice_path))
    first.rows[-1].ran = ran_for(log)
    if cluster is not None:
        out = root / f"slurm-{name}"
        out.mkdir()
        for row_name, mem in (
            ("Slurm --mem=cap", {job.key: job.cap for job in jobs}),
            ("Slurm --mem=peak×1.1", {job.key: int(job.peak * 1.1) + 1 for job in jobs}),
        ):
            first.rows.append(slurm_row(cluster, script, jobs, logged(env, log), out, row_name,
                                        mem))
            first.rows[-1].ran = ran_for(log)
            print(f"{name}: {row_name}: {first.rows[-1].makespan:.1f} s", flush=True)
    config = root / f"config-{name}.toml"
    total = mem_total()
    config.write_text(
        f'[memory]\nslice = "{slice_path / ("swarmdeck-" + name)}"\n'
        f'reserve = "{total - SLICE_MIB * MIB}B"\nmargin = "1M"\nadmission_wait = 3600.0\n'
    )
    (slice_path / f"swarmdeck-{name}").mkdir()
    sd_env = {**env, "SWARMDECK_CONFIG": str(config),
              "SWARMDECK_STATE_DIR": str(root / f"state-{name}"),
              "SWARMDECK_RUN_DIR": str(root / f"run-{name}")}
    days = ["swarmdeck, first day (no history)", "swarmdeck, second day (learned)",
            "swarmdeck, third day (learned)"]
    for day, growth in enumerate(growths):
        write_plan(plan, jobs, growth)
        row = swarmdeck_day(script, jobs, logged(sd_env, log), work, days[day])
        row.ran = ran_for(log)
        with (root / f"days-{name}.json").open("a") as days_file:
            days_file.write(json.dumps({"day": day + 1, "wall": row.wall}) + "\n")
        if day == 0:
            first.rows.append(row)
            results.append(first)
        else:
            label = f"{name}, peaks ×{growth:g}" if growth != 1.0 else name
            results.append(TraceResult(label, jobs, growth, bound_of(jobs, growth, cost), [row]))
        print(f"{name}: {row.name}: {row.makespan:.1f} s, lost {row.lost}", flush=True)
    return results


def mem_total() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) * 1024
    raise SystemExit("bench_swarm: no MemTotal in /proc/meminfo")


def table(results: list[TraceResult]) -> list[str]:
    lines = [
        "| trace | scheduler | makespan / bound | utilisation | jobs lost | makespan"
        " | bound (as run) | bound (alone) | makespan / bound (alone) |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for result in results:
        for row in result.rows:
            measured = result.measured(row)
            finished = row.makespan is not None and not row.note and measured is not None
            ratio = f"{row.makespan / measured[0]:.2f}×" if finished and measured else "—"
            use = (f"{measured[1] / (SLICE_MIB * row.makespan):.0%}"
                   if finished and measured and row.makespan else "—")
            alone = f"{row.makespan / result.nominal:.2f}×" if finished and row.makespan else "—"
            lines.append(
                f"| {result.name} | {row.name} | {ratio} | {use} | {row.lost} of"
                f" {len(result.jobs)} | {row.makespan or 0:.1f} s"
                f" | {f'{measured[0]:.1f} s' if measured else '—'} | {result.nominal:.1f} s"
                f" | {alone} |"
            )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", default="bimodal,heavy-tail,family,drifting")
    parser.add_argument("--no-slurm", action="store_true")
    parser.add_argument("--scale", type=float, default=1.0,
                        help="multiply every hold by this (the ratios are what matter)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--keep", type=Path, default=None,
                        help="work in this (new) folder and leave it: the ledgers to look at")
    args = parser.parse_args()
    if os.geteuid() != 0 or not V1_MEMORY.is_dir():
        sys.exit("bench_swarm: needs root and a cgroup v1 memory hierarchy")
    slurm_why = "not asked for" if args.no_slurm else None
    cluster = None
    results: list[TraceResult] = []
    with tempfile.TemporaryDirectory(prefix="swarmdeck-bench-swarm-") as folder:
        root = Path(folder)
        if args.keep is not None:
            args.keep.mkdir(parents=True)
            root = args.keep
        script = root / "job.py"
        script.write_text(JOB)
        slice_path = V1_MEMORY / f"swarmdeck-bench-swarm-{os.getpid()}"
        slice_path.mkdir()
        base_env = {k: v for k, v in os.environ.items() if not k.startswith("SWARMDECK_")}
        try:
            if slurm_why is None:
                from slurmkit import ClusterBusy, SlurmCluster, why_no_cluster

                slurm_why = why_no_cluster()
                if slurm_why is None:
                    cluster = SlurmCluster(root / "cluster", node_memory_mib=SLICE_MIB,
                                           node_cpus=64, scheduler="bf_interval=1")
                    try:
                        cluster.start()
                    except ClusterBusy as busy:
                        cluster, slurm_why = None, str(busy)
            plan = root / "plan-probe.json"
            cost = start_cost(script, plan, logged({**base_env, "SWARM_BENCH_PLAN": str(plan)},
                                                   root / "log-probe"))
            for name in args.traces.split(","):
                results += run_trace(name, args, root, slice_path, cluster, cost, script,
                                     base_env)
        finally:
            if cluster is not None:
                cluster.stop()
            for group in sorted(slice_path.rglob("*"), key=lambda p: -len(p.parts)):
                if group.is_dir():
                    remove_group(group)
            remove_group(slice_path)
    lines = table(results)
    print("\n".join(lines))
    header = [
        f"## One run: {args.traces}",
        "",
        f"`bench/bench_swarm.py` on {platform.node()} ({os.cpu_count()} cores, load "
        f"{os.getloadavg()[0]:.1f} at the end), "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())};"
        f" slice {SLICE_MIB} MiB, holds ×{args.scale:g}, one job's start cost {cost:.2f} s."
        + (f" Slurm rows: none ({slurm_why})." if cluster is None and slurm_why else ""),
        "Ratios from one run each; raw makespans beside them. A lost swarmdeck job is run again"
        " at once and its rerun counted in the makespan.",
        "",
    ]
    add_run(args.out, header + lines)


def add_run(path: Path, run: list[str]) -> None:
    """Add a run's section at the end of the results file, what is there kept: the file holds
    rounds of results and their reading, and a run of one trace must not replace them."""
    before = path.read_text() if path.exists() else f"{TITLE}\n"
    path.write_text(before.rstrip("\n") + "\n\n" + "\n".join(run) + "\n")


if __name__ == "__main__":
    main()
