"""What submitting through swarmdeck costs on Slurm: `swarmdeck run --on slurm -- true` against
`sbatch --wait --wrap true`, both on the same single-node test cluster in the same run.

Both wait for the job to end; swarmdeck also books `--mem` from the peak table, follows the
output file, and reads the batch step's MaxRSS back from accounting into the peak table. The
figure is the ratio of the medians of N alternating runs of each (goal: at most 1.2×).

Needs root and the Slurm, munge and MariaDB binaries (bash .ci/run installs them); it starts
its own cluster in a temporary folder (tests/slurm/slurmkit.py) and stops it at the end.
Writes bench/results/slurm.md.

    .venv/bin/python bench/bench_slurm.py [--runs N]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "slurm"))

from slurmkit import ClusterBusy, SlurmCluster, why_no_cluster

SWARMDECK = str(Path(sys.executable).parent / "swarmdeck")
RESULTS = Path(__file__).resolve().parent / "results" / "slurm.md"


def timed(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    began = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, timeout=120)
    took = time.perf_counter() - began
    if done.returncode != 0:
        sys.exit(f"bench_slurm: {' '.join(argv)} exited {done.returncode}: "
                 f"{done.stderr.decode(errors='replace').strip()[-300:]}")
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    why = why_no_cluster()
    if why:
        sys.exit(f"bench_slurm: {why}")
    with tempfile.TemporaryDirectory(prefix="swarmdeck-bench-slurm-") as folder:
        root = Path(folder)
        cluster = SlurmCluster(root / "cluster")
        try:
            try:
                cluster.start()
            except ClusterBusy as busy:
                sys.exit(f"bench_slurm: {busy}; run it again when that run is done")
            work = root / "work"
            work.mkdir()
            config = root / "config.toml"
            config.write_text(
                f'[slurm]\nenabled = true\nconf = "{cluster.conf}"\n'
                f'output_dir = "{root / "out"}"\n'
            )
            env = {
                **cluster.client_env(), "SWARMDECK_CONFIG": str(config),
                "SWARMDECK_STATE_DIR": str(root / "state"),
            }
            ours_argv = [SWARMDECK, "run", "--on", "slurm", "--", "true"]
            bare_argv = ["sbatch", "--wait", "--mem=64M", f"--output={root / 'out' / 'bare.out'}",
                         "--wrap", "true"]
            (root / "out").mkdir()
            timed(ours_argv, env, work)  # the first run learns the peak; not counted
            submit_argv = ["sbatch", "--parsable", "--mem=64M",
                           f"--output={root / 'out' / 'submit.out'}", "--wrap", "true"]
            ours, bare, submit = [], [], []
            load = os.getloadavg()[0]
            for _ in range(args.runs):
                ours.append(timed(ours_argv, env, work))
                bare.append(timed(bare_argv, env, work))
                submit.append(timed(submit_argv, env, work))
        finally:
            cluster.stop()
    ours_median, bare_median = statistics.median(ours), statistics.median(bare)
    ratio = ours_median / bare_median
    rows = [
        ("test cluster start-up (munge, MariaDB, slurmdbd, slurmctld, slurmd)",
         f"{cluster.started_in:.1f} s"),
        (f"`sbatch --parsable --wrap true` (submit only, no wait), median of {args.runs}",
         f"{statistics.median(submit) * 1000:.0f} ms"),
        (f"`sbatch --wait --wrap true`, median of {args.runs}", f"{bare_median * 1000:.0f} ms"),
        (f"`swarmdeck run --on slurm -- true`, median of {args.runs}",
         f"{ours_median * 1000:.0f} ms"),
        ("overhead (ratio of medians; goal ≤ 1.2×)", f"{ratio:.2f}×"),
        ("overhead (difference of medians)", f"{(ours_median - bare_median) * 1000:+.0f} ms"),
    ]
    uname = platform.uname()
    lines = [
        "# swarmdeck run --on slurm: submission overhead",
        "",
        f"Measured by `bench/bench_slurm.py` on {uname.node} ({os.cpu_count()} CPUs, kernel "
        f"{uname.release}, Slurm single-node test cluster), {time.strftime('%Y-%m-%d %H:%M')}, "
        f"load average before the runs {load:.2f}.",
        "",
        "| figure | value |",
        "| --- | --- |",
        *[f"| {name} | {value} |" for name, value in rows],
        "",
        "Both wait for the job to end. `sbatch --wait` polls the controller at growing "
        "intervals (its first look comes after seconds), which is most of its time here; "
        "swarmdeck polls every `slurm.poll_interval` (0.25 s) and, after the end, reads the "
        "batch step's MaxRSS from accounting (waiting for slurmdbd to hold it) so the next "
        "booking learns. The submit-only row is the floor any waiting client starts from.",
        "",
    ]
    RESULTS.write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
