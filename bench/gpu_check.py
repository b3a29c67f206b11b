"""A short check of the GPU probe on a machine that has a GPU: cards, one process, query cost.

The tests drive a scripted NVML stand-in because the build machines have no GPU; this script
is the counterpart for a real card. It prints what NVML reports for each card, starts a tiny
CUDA process (with torch or cupy, when importable) and checks the probe sees it, and times the
probe per call (median of N). On a machine without a GPU it says "no GPU" and exits 0.

    python bench/gpu_check.py [--calls N] [--wait S]
"""

from __future__ import annotations

import argparse
import importlib.util
import select
import statistics
import subprocess
import sys
import time

from swarmdeck.probes.gpu import GpuSnapshot, Reading, gpu_snapshot
from swarmdeck.probes.nvml import READY, Missing, shared_nvml

CUDA_HOLDERS = {
    "torch": "import time, torch; x = torch.ones(1 << 20, device='cuda'); torch.cuda.synchronize()",
    "cupy": "import time, cupy; x = cupy.ones(1 << 20); cupy.cuda.runtime.deviceSynchronize()",
}


def _percent(value: Reading) -> str:
    return f"{value}%" if isinstance(value, int) else value


def show_cards(snapshot: GpuSnapshot) -> None:
    print(f"driver {snapshot.driver_version}, {len(snapshot.cards)} card(s)")
    for card in snapshot.cards:
        print(
            f"  GPU {card.index}: {card.name} memory used {card.memory_used} of"
            f" {card.memory_total}, free {card.memory_free}; utilisation"
            f" {_percent(card.utilization)}, memory utilisation"
            f" {_percent(card.memory_utilization)}, temperature {card.temperature}"
        )
        if card.problem:
            print(f"    {card.problem}")
        processes = card.processes if isinstance(card.processes, list) else []
        if isinstance(card.processes, str):
            print(f"    processes: {card.processes}")
        for process in processes:
            print(
                f"    pid {process.pid} {process.name} ({process.user}) uses"
                f" {process.used_memory}: {process.command[:80]}"
            )


def start_cuda_process(wait: float) -> tuple[subprocess.Popen[str] | None, str]:
    """A child holding a little GPU memory, or None and why none could be started."""
    for module, code in CUDA_HOLDERS.items():
        if importlib.util.find_spec(module) is None:
            continue
        child = subprocess.Popen(
            [sys.executable, "-c", f"{code}; print('ready', flush=True); time.sleep(120)"],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert child.stdout is not None
        ready, _, _ = select.select([child.stdout], [], [], wait)
        if ready and child.stdout.readline().strip() == "ready":
            return child, f"started with {module}"
        child.kill()
        child.wait()
        return None, f"{module} is importable but did not allocate on the GPU within {wait:g} s"
    return None, "could not start a CUDA process: neither torch nor cupy is importable"


def compute_pids() -> set[int]:
    return {p.pid for card in gpu_snapshot().cards for p in card.process_list}


def see_process(pid: int, before: set[int], wait: float) -> str:
    """Whether the probe lists the child; a different new pid means NVML reports pids of
    another pid namespace (a container), where names, users and gpu-run holders cannot be
    matched to local processes."""
    deadline = time.monotonic() + wait
    new: set[int] = set()
    while time.monotonic() < deadline:
        for card in gpu_snapshot().cards:
            for process in card.process_list:
                if process.pid == pid:
                    return f"seen: pid {pid} on GPU {card.index} using {process.used_memory}"
                if process.pid not in before:
                    new.add(process.pid)
        time.sleep(0.2)
    if new:
        return (
            f"NOT seen as pid {pid}, but new compute pid(s) {sorted(new)} appeared: NVML"
            " reports pids of another pid namespace here"
        )
    return f"NOT seen: pid {pid} did not appear among compute processes within {wait:g} s"


def time_per_call(calls: int) -> tuple[float, float | None]:
    """Median milliseconds of one whole-probe snapshot and of one memory-info query."""
    nvml = shared_nvml()
    whole, single = [], []
    handle = nvml.query("nvmlDeviceGetHandleByIndex", 0)
    for _ in range(calls):
        started = time.perf_counter()
        gpu_snapshot()
        whole.append(time.perf_counter() - started)
        if not isinstance(handle, Missing):
            started = time.perf_counter()
            nvml.query("nvmlDeviceGetMemoryInfo", handle)
            single.append(time.perf_counter() - started)
    return statistics.median(whole) * 1000, statistics.median(single) * 1000 if single else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=50, help="timed calls (median reported)")
    parser.add_argument("--wait", type=float, default=30.0, help="seconds to wait for the process")
    args = parser.parse_args(argv)

    started = time.perf_counter()
    snapshot = gpu_snapshot()
    print(f"first query (NVML start included): {(time.perf_counter() - started) * 1000:.1f} ms")
    if snapshot.state != READY:
        print(f"{snapshot.state}: {snapshot.reason}")
        return 0
    show_cards(snapshot)

    before = compute_pids()
    child, how = start_cuda_process(args.wait)
    print(f"CUDA process: {how}")
    if child is not None:
        try:
            print(f"CUDA process {see_process(child.pid, before, args.wait)}")
        finally:
            child.kill()
            child.wait()

    whole, single = time_per_call(args.calls)
    print(
        f"probe cost, median of {args.calls}: snapshot {whole:.3f} ms, memory info {single:.3f} ms"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
