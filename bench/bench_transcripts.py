"""What reading Claude Code transcripts costs: the first read of everything, then one appended line.

Builds a scratch `$CLAUDE_CONFIG_DIR` of real-shaped transcripts (main sessions with parallel
Agent calls, background launches and notifications, subagent files with tool calls and usage),
reads it once with a SessionsProbe, then appends one line and refreshes: once through a full
scan (every file stat'ed) and once through the watcher's path (only the changed file). Both
appended-line figures are measured at two total sizes; they must not grow with the total.

    python bench/bench_transcripts.py [--mb 200] [--small-mb 50] [--runs 20] [--write FILE]

`--compare SRC` measures another tree's swarmdeck (its `src`, say main's before a change) against
this one on the same --mb transcripts, in one run: two reader processes, one per tree, take
turns refreshing after each appended line (a user line, then an assistant line with usage), so
a busy machine slows both alike; the figure is the ratio of their medians.

    python bench/bench_transcripts.py --compare /path/to/main/src [--mb 200] [--runs 60]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from swarmdeck.probes.claude.sessions import SessionsProbe

FILLER = "The module walks the tree and reports what it found. " * 12


def _line(kind: str, sid: str, n: int, **extra: object) -> str:
    record = {
        "parentUuid": f"u{n - 1}",
        "isSidechain": "agentId" in extra,
        "userType": "external",
        "cwd": "/work/proj",
        "sessionId": sid,
        "version": "2.1.232",
        "gitBranch": "main",
        "type": kind,
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(1.79e9 + n)),
        "uuid": f"u{n}",
    }
    record.update(extra)
    return json.dumps(record) + "\n"


def _assistant_tool(sid: str, n: int, tool_id: str, name: str, tool_input: dict, **extra) -> str:
    message = {
        "id": f"msg_{n}",
        "type": "message",
        "role": "assistant",
        "model": "claude-opus-4-6",
        "content": [{"type": "tool_use", "id": tool_id, "name": name, "input": tool_input}],
        "stop_reason": None,
        "usage": {"input_tokens": 12, "cache_read_input_tokens": 40000, "output_tokens": 90},
    }
    return _line("assistant", sid, n, message=message, requestId=f"req_{n}", **extra)


def _result(sid: str, n: int, tool_id: str, text: str, **extra) -> str:
    content = [{"type": "tool_result", "tool_use_id": tool_id, "content": text}]
    return _line("user", sid, n, message={"role": "user", "content": content}, **extra)


def write_session(project: Path, index: int, target_bytes: int) -> int:
    """One main session with subagents, about `target_bytes` in all; returns bytes written."""
    sid = f"{index:08d}-0000-4000-8000-000000000000"
    main = project / f"{sid}.jsonl"
    agents_dir = project / sid / "subagents"
    agents_dir.mkdir(parents=True)
    written = 0
    n = 0
    with open(main, "w") as out:
        while written < target_bytes:
            batch = []
            for k in range(3):
                tool_id = f"toolu_{index}_{n}_{k}"
                agent_id = f"a{index:03d}{n:06d}{k}"
                batch.append(
                    _assistant_tool(
                        sid, n, tool_id, "Agent",
                        {"description": f"part {k}", "prompt": f"Do part {k} of {n}. {FILLER}",
                         "subagent_type": "general-purpose"},
                    )
                )
                n += 1
                batch.append(_result(sid, n, tool_id, f"Async agent launched.\nagentId: {agent_id}",
                                     toolUseResult={"isAsync": True, "status": "async_launched",
                                                    "agentId": agent_id}))
                n += 1
                body = [_line("user", sid, 0, agentId=agent_id, message={
                    "role": "user", "content": f"Do part {k} of {n}. {FILLER}"})]
                for step in range(6):
                    call = f"toolu_{agent_id}_{step}"
                    body.append(_assistant_tool(sid, step * 2 + 1, call, "Bash",
                                                {"command": f"grep -rn thing src/{step}"},
                                                agentId=agent_id))
                    body.append(_result(sid, step * 2 + 2, call, FILLER * 2, agentId=agent_id))
                agent_text = "".join(body)
                (agents_dir / f"agent-{agent_id}.jsonl").write_text(agent_text)
                written += len(agent_text)
                batch.append(json.dumps({
                    "type": "queue-operation", "operation": "enqueue", "sessionId": sid,
                    "timestamp": "2026-09-01T00:00:00.000Z",
                    "content": f"<task-notification>\n<task-id>{agent_id}</task-id>\n"
                               f"<tool-use-id>{tool_id}</tool-use-id>\n<status>completed</status>\n"
                               "<summary>done</summary>\n</task-notification>"}) + "\n")
            text = "".join(batch)
            out.write(text)
            written += len(text)
    return written


SESSION_MB = 10.0
"""Every session is the same size; a larger total is more sessions, as on a busy machine."""


def build(root: Path, total_mb: float) -> int:
    project = root / "projects" / "-work-proj"
    project.mkdir(parents=True)
    sessions = max(1, round(total_mb / SESSION_MB))
    per = int(total_mb * 1024 * 1024 / sessions)
    return sum(write_session(project, i, per) for i in range(sessions))


def measure(root: Path, runs: int) -> dict[str, float]:
    probe = SessionsProbe(root)
    start = time.perf_counter()
    sessions = probe.refresh()
    first = time.perf_counter() - start
    assert sessions, "no sessions read"
    target = Path(sessions[0].transcript_path)
    full, watched = [], []
    for n in range(runs):
        line = _line("user", "x", 10**6 + n, message={"role": "user", "content": f"ping {n}"})
        for bucket, changed in ((full, None), (watched, [target])):
            with open(target, "a") as out:
                out.write(line)
            start = time.perf_counter()
            probe.refresh(changed)
            bucket.append(time.perf_counter() - start)
    return {
        "first": first,
        "full": statistics.median(full),
        "watched": statistics.median(watched),
        "files": sum(1 for _ in root.rglob("*.jsonl")),
    }


def appended(n: int) -> str:
    """The n-th appended line: a user line, or an assistant line with usage (the figures')."""
    if n % 2 == 0:
        return _line("user", "x", 10**6 + n, message={"role": "user", "content": f"ping {n}"})
    return _assistant_tool("x", 10**6 + n, f"toolu_ab_{n}", "Bash", {"command": "ls"})


def worker(root: Path) -> int:
    """One reader of the comparison: refresh on each path read from stdin, print the ms."""
    probe = SessionsProbe(root)
    sessions = probe.refresh()
    print(sessions[0].transcript_path, flush=True)
    for line in sys.stdin:
        kind, path = line.split(" ", 1)
        start = time.perf_counter()
        probe.refresh([Path(path.strip())] if kind == "watched" else None)
        print(f"{(time.perf_counter() - start) * 1000:.4f}", flush=True)
    return 0


def compare(other_src: Path, mb: float, runs: int) -> str:
    """This tree's reader against `other_src`'s, taking turns on the same transcripts."""
    here = Path(__file__).resolve().parents[1] / "src"
    scratch = Path(tempfile.mkdtemp(prefix="swarmdeck-bench-transcripts-"))
    readers: list[subprocess.Popen[str]] = []
    try:
        written = build(scratch, mb)
        for src in (other_src, here):
            env = {**os.environ, "PYTHONPATH": str(src)}
            readers.append(subprocess.Popen(
                [sys.executable, __file__, "--worker", str(scratch)], env=env, text=True,
                stdin=subprocess.PIPE, stdout=subprocess.PIPE))
        targets = [reader.stdout.readline().strip() for reader in readers]  # type: ignore[union-attr]
        assert targets[0] == targets[1], targets
        figures: dict[str, list[list[float]]] = {"watched": [[], []], "full": [[], []]}
        for n in range(runs):
            for kind in ("watched", "full") if n % 4 == 0 else ("watched",):
                with open(targets[0], "a") as out:
                    out.write(appended(n))
                order = (0, 1) if n % 2 == 0 else (1, 0)
                for index in order:
                    reader = readers[index]
                    reader.stdin.write(f"{kind} {targets[0]}\n")  # type: ignore[union-attr]
                    reader.stdin.flush()  # type: ignore[union-attr]
                    figures[kind][index].append(float(reader.stdout.readline()))  # type: ignore[union-attr]
    finally:
        for reader in readers:
            reader.stdin.close()  # type: ignore[union-attr]
            reader.wait()
        shutil.rmtree(scratch, ignore_errors=True)
    rows = [
        f"Compared: {other_src} (before) and {here} (after), taking turns on"
        f" {written / 1024 / 1024:.0f} MB of transcripts; medians; {os.cpu_count()} cores.",
        "",
        "| one appended line | before | after | after / before |",
        "| --- | ---: | ---: | ---: |",
    ]
    for kind, label in (("watched", "watched path"), ("full", "full scan")):
        before, after = (statistics.median(values) for values in figures[kind])
        count = len(figures[kind][0])
        rows.append(f"| {label} ({count} lines) | {before:.2f} ms | {after:.2f} ms"
                    f" | {after / before:.2f}x |")
    return "\n".join(rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=200)
    parser.add_argument("--small-mb", type=float, default=50)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--write", type=Path)
    parser.add_argument("--compare", type=Path, metavar="SRC")
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker is not None:
        return worker(args.worker)
    if args.compare is not None:
        text = compare(args.compare, args.mb, args.runs)
        print(text)
        if args.write:
            with args.write.open("a") as out:
                out.write("\nMeasured with `python bench/bench_transcripts.py --compare SRC`.\n\n"
                          + text + "\n")
        return 0
    results = {}
    for size in (args.small_mb, args.mb):
        scratch = Path(tempfile.mkdtemp(prefix="swarmdeck-bench-transcripts-"))
        try:
            written = build(scratch, size)
            figures = measure(scratch, args.runs)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        figures["mb"] = written / 1024 / 1024
        results[size] = figures
    small, big = results[args.small_mb], results[args.mb]
    rows = [
        "| transcripts | files | first read | MB/s | one line, full scan | one line, watched |",
        "| ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for figures in (small, big):
        rows.append(
            f"| {figures['mb']:.0f} MB | {figures['files']:.0f} | {figures['first']:.2f} s"
            f" | {figures['mb'] / figures['first']:.0f} | {figures['full'] * 1000:.1f} ms"
            f" | {figures['watched'] * 1000:.2f} ms |"
        )
    growth_full = big["full"] / small["full"]
    growth_watched = big["watched"] / small["watched"]
    text = "\n".join(
        [
            f"Runs: {args.runs} appended lines per size (median); {os.cpu_count()} cores.",
            "",
            *rows,
            "",
            f"- one appended line, watched path: {growth_watched:.2f}x when the total grows "
            f"{big['mb'] / small['mb']:.1f}x (bytes read per refresh: the line only)",
            f"- one appended line, full scan: {growth_full:.2f}x (it stats every file: it follows"
            " the number of files, not their bytes)",
        ]
    )
    print(text)
    if args.write:
        previous = args.write.read_text() if args.write.exists() else ""
        marker = "\n## Transcripts\n"
        head = previous[: previous.index(marker)] if marker in previous else previous
        args.write.write_text(
            head.rstrip("\n") + "\n" + marker + "\nMeasured with "
            "`python bench/bench_transcripts.py`.\n\n" + text + "\n"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
