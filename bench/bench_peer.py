"""What talking to peers costs, as ratios measured in one run against loopback SSH servers.

1. Probing 8 peers at once vs one (goal: at most 1.5x). Each peer is asyncssh's server on
   127.0.0.1 (tests/ssh_server.py), all eight in a process of their own, answering the probe
   with a recorded snapshot: the figure is the prober's own cost (connections, channels,
   parsing), not eight peers' `swarmdeck probe` processes sharing this machine's two cores.
   Each answers after the time a real `swarmdeck probe --json` takes here (measured in this
   run), waiting rather than computing, since a real peer computes on its own cores; a second
   pair of rows with no wait shows the prober's CPU cost alone, which on loopback adds up per
   peer. Measured cold (a new prober: connect, authenticate, verify the host key) and warm
   (the kept-alive connections).
2. Copying a 2,000-file tree to a loopback peer: the peer run's one tar stream over one channel
   vs per-file SFTP (makedirs + put per file, over the same kind of connection), interleaved
   (goal: at least 5x faster).

    python bench/bench_peer.py [--rounds 5] [--write bench/results/peer.md]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import asyncssh  # noqa: E402

from ssh_server import SshServer  # noqa: E402

FILES = 2000
PEERS = 8


def peer_config(scratch: Path, servers: list[dict[str, object]]) -> Path:
    """A config naming each server (port, identity, known_hosts) as a peer."""
    lines = []
    for number, server in enumerate(servers):
        lines += [
            "[[hosts]]", f'name = "peer{number}"', 'address = "127.0.0.1"',
            f"port = {server['port']}", f"known_hosts = {json.dumps(server['known_hosts'])}",
            f"identity = {json.dumps(server['identity'])}",
            f"run_root = {json.dumps(str(scratch / 'runs'))}", "",
        ]
    path = scratch / f"config-{len(servers)}.toml"
    path.write_text("\n".join(lines))
    return path


def described(server: SshServer, folder: Path) -> dict[str, object]:
    known = server.known_hosts(folder / "known_hosts")
    return {"port": server.port, "identity": str(server.identity), "known_hosts": str(known)}


def serve(folder: Path, count: int, answer: Path) -> None:
    """The --serve child: start `count` answering servers, print them; each line on stdin sets
    the answer delay of all; runs until stdin ends."""
    servers = []
    for number in range(count):
        (folder / f"server{number}").mkdir()
        servers.append(SshServer(folder / f"server{number}", "answer", answer.read_text()))
    print(json.dumps([described(s, folder / f"server{n}") for n, s in enumerate(servers)]),
          flush=True)
    for line in sys.stdin:
        for server in servers:
            server.answer_delay = float(line)
        print("ok", flush=True)
    for server in servers:
        server.stop()


def probe_rounds(config_path: Path, rounds: int, cold: bool) -> list[float]:
    from swarmdeck.config import load_config
    from swarmdeck.probes.peer import PeerProber

    config = load_config(config_path)
    times = []
    prober = PeerProber()
    try:
        prober.read_all(config)
        for _ in range(rounds):
            if cold:
                prober.close()
                prober = PeerProber()
            start = time.perf_counter()
            readings = prober.read_all(config)
            times.append(time.perf_counter() - start)
            assert all(r.state == "read" for r in readings), [r.reason for r in readings]
    finally:
        prober.close()
    return times


def make_tree(work: Path) -> list[str]:
    names = []
    for number in range(FILES):
        name = f"pkg{number % 40}/mod{number % 7}/file{number}.py"
        path = work / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# file {number}\n" + "x = 1\n" * (number % 200))
        names.append(name)
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    subprocess.run(["git", "-C", str(work), "add", "-A"], check=True)
    return names


async def sftp_copy(server: SshServer, work: Path, names: list[str], target: Path) -> float:
    async with asyncssh.connect(
        "127.0.0.1", server.port, username="bench", client_keys=[str(server.identity)],
        known_hosts=asyncssh.import_known_hosts(
            f"[127.0.0.1]:{server.port} {server.host_key.export_public_key().decode().strip()}"
        ),
    ) as conn, conn.start_sftp_client() as sftp:
        start = time.perf_counter()
        made: set[str] = set()
        for name in names:
            folder = str((target / name).parent)
            if folder not in made:
                await sftp.makedirs(folder, exist_ok=True)
                made.add(folder)
            await sftp.put(str(work / name), str(target / name))
        return time.perf_counter() - start


def copy_rounds(scratch: Path, server: SshServer, rounds: int) -> tuple[list[float], list[float]]:
    from swarmdeck.actions.hosts.ssh import SshHost, tree_files
    from swarmdeck.config import load_config

    work = scratch / "tree"
    names = make_tree(work)
    config = load_config(peer_config(scratch, [described(server, scratch)]))
    host = SshHost(config.hosts[0])
    tar_times, sftp_times = [], []
    try:
        host.run("true")
        for number in range(rounds):
            start = time.perf_counter()
            files = tree_files(work, untracked=False)
            landed = host._copy(work, files, f"tar-{number}")
            tar_times.append(time.perf_counter() - start)
            assert sum(1 for p in Path(landed).rglob("*") if p.is_file()) == FILES
            target = scratch / "runs" / f"sftp-{number}"
            sftp_times.append(asyncio.run(sftp_copy(server, work, names, target)))
            assert sum(1 for p in target.rglob("*") if p.is_file()) == FILES
    finally:
        host.close()
    return tar_times, sftp_times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--write", type=Path, help="also write the results as markdown here")
    parser.add_argument("--serve", nargs=3, metavar=("DIR", "N", "ANSWER"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(Path(args.serve[0]), int(args.serve[1]), Path(args.serve[2]))
        return 0
    scratch = Path(tempfile.mkdtemp(prefix="swarmdeck-bench-peer-"))
    os.environ["SWARMDECK_STATE_DIR"] = str(scratch / "state")
    os.environ["SWARMDECK_CONFIG"] = str(scratch / "none.toml")
    answer = scratch / "snapshot.json"
    snapshot = subprocess.run(
        [str(Path(sys.executable).parent / "swarmdeck"), "probe", "--json"],
        capture_output=True, check=True,
    ).stdout
    answer.write_bytes(snapshot)
    json.loads(snapshot)
    probe_times = []
    for _ in range(5):
        start = time.perf_counter()
        subprocess.run([str(Path(sys.executable).parent / "swarmdeck"), "probe", "--json"],
                       capture_output=True, check=True)
        probe_times.append(time.perf_counter() - start)
    remote_probe = statistics.median(probe_times)
    child = subprocess.Popen(
        [sys.executable, __file__, "--serve", str(scratch / "peers"), str(PEERS), str(answer)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
    )
    (scratch / "peers").mkdir()
    copy_server = SshServer(scratch, "shell")
    try:
        assert child.stdout is not None and child.stdin is not None
        peers = json.loads(child.stdout.readline())
        one = peer_config(scratch, peers[:1])
        many = peer_config(scratch, peers)
        results = {}
        for delay in (remote_probe, 0.0):
            child.stdin.write(f"{delay}\n".encode())
            child.stdin.flush()
            child.stdout.readline()
            for cold in (True, False):
                single = probe_rounds(one, args.rounds, cold)
                eight = probe_rounds(many, args.rounds, cold)
                results[delay, cold] = (statistics.median(single), statistics.median(eight))
        tar_times, sftp_times = copy_rounds(scratch, copy_server, max(3, args.rounds // 2))
    finally:
        copy_server.stop()
        if child.stdin is not None:
            child.stdin.close()
        child.wait(timeout=30)
        shutil.rmtree(scratch, ignore_errors=True)
    tar, sftp = statistics.median(tar_times), statistics.median(sftp_times)
    lines = [
        "## Peers",
        "",
        "Measured with `python bench/bench_peer.py`.",
        "",
        f"Rounds: {args.rounds} per probe case, {len(tar_times)} per copy, interleaved; "
        f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the end; "
        f"python {platform.python_version()}.",
        "",
        "| case | 1 peer ms | 8 peers ms | 8 / 1 | goal |",
        "| --- | ---: | ---: | ---: | --- |",
    ]
    for (delay, cold), (single, eight) in results.items():
        wait = f"peer answers in {delay * 1000:.0f} ms" if delay else "no wait (CPU alone)"
        label = f"probe, {'cold (connect + host key)' if cold else 'warm'}, {wait}"
        goal = "≤ 1.5" if delay else "(no goal)"
        lines.append(f"| {label} | {single * 1000:.1f} | {eight * 1000:.1f} | "
                     f"{eight / single:.2f} | {goal} |")
    lines += [
        "",
        f"| copy of {FILES} files | ms | × |",
        "| --- | ---: | ---: |",
        f"| one tar stream over one channel | {tar * 1000:.0f} | 1.00 |",
        f"| per-file SFTP (makedirs + put) | {sftp * 1000:.0f} | {sftp / tar:.1f} |",
        "",
        f"- tar stream is {sftp / tar:.1f}× faster than per-file SFTP (goal ≥ 5×): "
        + ("within" if sftp / tar >= 5 else "NOT within"),
        *(
            f"- 8 peers at once, {'cold' if cold else 'warm'}: {eight / single:.2f}× one "
            f"(goal ≤ 1.5×): " + ("within" if eight / single <= 1.5 else "NOT within")
            for (delay, cold), (single, eight) in results.items() if delay
        ),
        "",
    ]
    text = "\n".join(lines)
    print(text)
    if args.write:
        previous = args.write.read_text() if args.write.exists() else ""
        args.write.write_text(text + ("\n" + previous if previous.strip() else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
