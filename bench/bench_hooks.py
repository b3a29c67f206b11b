"""What a `swarmdeck hook` call costs, as ratios to a bare interpreter start, measured in one run.

The hook runs before every Bash call an agent makes, so a light command's hook must cost at most
2x a bare `python -c pass` (median of 20), and a heavy one's answer stays under 300 ms with local
probes, also when the heavy work hides in a 100-line script in command position (read and
parsed by the shell parser, strict preset: a deny). A light command the prefilter cannot clear
(`grep pytest …`) goes through the parser: that case shows what the prefilter saves.

Runs are interleaved (bare, light, heavy, bare, light, …) so machine load hits all
alike. Everything runs in a scratch state/config/Claude folder. Each hook is started by the very
command line `swarmdeck hooks install` writes into Claude Code's settings for its event.

With `--before SRC`, each hook case is also run against another tree's sources (SRC on
PYTHONPATH, the same venv and console script), interleaved with the rest: a change's before and
after as ratios within one run.

    python bench/bench_hooks.py [--runs 20] [--before SRC] [--write bench/results/hooks.md]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from swarmdeck.actions.hooks_install import SESSION_SOURCES
from swarmdeck.cache_settle import SETTLE_NS

ROOT = Path(__file__).resolve().parent.parent
SWARMDECK = Path(sys.executable).parent / "swarmdeck"
LIGHT_LIMIT = 2.0
"""A light command's hook, as a multiple of the bare interpreter's start."""


def payload(event: str, **fields: object) -> bytes:
    data = {
        "session_id": "bench-session",
        "transcript_path": "/nonexistent/bench.jsonl",
        "cwd": str(ROOT),
        "permission_mode": "default",
        "hook_event_name": event,
    }
    data.update(fields)
    return json.dumps(data).encode()


LIGHT = payload(
    "PreToolUse",
    tool_name="Bash",
    tool_input={"command": "git status --short && ls -la src", "description": "look"},
    tool_use_id="toolu_light",
)
PARSED_LIGHT = payload(
    "PreToolUse",
    tool_name="Bash",
    tool_input={"command": "grep -rn pytest src | head -20", "description": "look"},
    tool_use_id="toolu_parsed",
)
SCRIPT_LINES = 100


def script_payload(folder: Path) -> bytes:
    """`bash verify.sh` from `folder`, where verify.sh is 99 light lines and `cargo test`."""
    light = [
        "set -euo pipefail", 'cd "$(dirname "$0")"', "export RUST_BACKTRACE=1",
        'echo "checking $(date)"', "test -f Cargo.toml || exit 1", "grep -q workspace Cargo.toml",
        "mkdir -p target/logs", 'for f in src/*.rs; do wc -l "$f"; done', "git status --short",
    ]
    lines = [light[n % len(light)] for n in range(SCRIPT_LINES - 1)] + ["cargo test --workspace"]
    (folder / "verify.sh").write_text("\n".join(lines) + "\n")
    data = json.loads(payload(
        "PreToolUse",
        tool_name="Bash",
        tool_input={"command": "bash verify.sh", "description": "verify"},
        tool_use_id="toolu_script",
    ))
    data["cwd"] = str(folder)
    return json.dumps(data).encode()


HEAVY = payload(
    "PreToolUse",
    tool_name="Bash",
    tool_input={"command": "pytest -q tests", "description": "tests"},
    tool_use_id="toolu_heavy",
)
SESSION_START = payload("SessionStart", source="compact")


def installed_command(event: str, matcher: str | None) -> list[str]:
    """The argv of the handler `hooks install` writes for this event and matcher."""
    from swarmdeck.actions.hooks_install import ENTRIES, wanted_handler

    [entry] = [e for e in ENTRIES if (e.event, e.matcher) == (event, matcher)]
    return shlex.split(wanted_handler(entry, str(SWARMDECK))["command"])


CPU_TIMES: dict[str, list[float]] = {}
"""CPU seconds (user + system) of each case's runs, beside the wall times."""


def timed(argv: list[str], stdin: bytes, env: dict[str, str], name: str = "") -> float:
    """Wall seconds of one run; its CPU seconds go to CPU_TIMES[name]."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, env=env)
    assert proc.stdin is not None
    proc.stdin.write(stdin)
    proc.stdin.close()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise subprocess.CalledProcessError(proc.returncode, argv)
    if name:
        CPU_TIMES.setdefault(name, []).append(usage.ru_utime + usage.ru_stime)
    return time.perf_counter() - start


def prefilter_line() -> str:
    """What the prefilter (hooks/heavy.py certainly_light) costs per call, in process."""
    import timeit

    from swarmdeck.hooks.heavy import HEAVY_COMMANDS, certainly_light

    command = json.loads(LIGHT)["tool_input"]["command"]
    runs = 20000
    seconds = timeit.timeit(lambda: certainly_light(command, HEAVY_COMMANDS, ()), number=runs)
    return (
        f"prefilter: {seconds / runs * 1e6:.0f} µs per light command, in process (it decides"
        " the light path without importing the parser)"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--write", type=Path, help="also write the results as markdown here")
    parser.add_argument("--before", type=Path, help="also run each hook case on these sources")
    args = parser.parse_args()

    scratch = Path(tempfile.mkdtemp(prefix="swarmdeck-bench-hooks-"))
    (scratch / "config.toml").touch()
    (scratch / "home").mkdir()
    env = dict(os.environ)
    # Installed packages carry compiled bytecode; a checkout run with PYTHONDONTWRITEBYTECODE
    # would compile every module on every call. Cache it in the scratch folder instead.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(scratch / "pycache")
    env.update(
        SWARMDECK_STATE_DIR=str(scratch / "state"),
        SWARMDECK_CONFIG=str(scratch / "config.toml"),
        SWARMDECK_RUN_DIR=str(scratch / "run"),
        CLAUDE_CONFIG_DIR=str(scratch / "claude"),
        HOME=str(scratch / "home"),
    )
    strict = dict(env)
    strict.update(
        SWARMDECK_STATE_DIR=str(scratch / "strict-state"),
        SWARMDECK_CONFIG=str(scratch / "strict.toml"),
    )
    (scratch / "strict.toml").write_text('[guards]\npreset = "strict"\n')
    python3 = shutil.which("python3") or sys.executable
    bash = installed_command("PreToolUse", "Bash")
    cases = {
        "bare venv python -c pass": ([sys.executable, "-c", "pass"], b"", env),
        "bare python3 -c pass (PATH)": ([python3, "-c", "pass"], b"", env),
        "hook, light Bash command": (bash, LIGHT, env),
        "hook, light Bash command, parsed": (bash, PARSED_LIGHT, env),
        "hook, heavy Bash command": (bash, HEAVY, env),
        f"hook, heavy in a {SCRIPT_LINES}-line script (strict: deny)": (
            bash, script_payload(scratch), strict,
        ),
        "hook, SessionStart (compact)": (
            installed_command("SessionStart", SESSION_SOURCES),
            SESSION_START,
            env,
        ),
    }
    if args.before:
        before_env = dict(env, PYTHONPATH=str(args.before.resolve()),
                          SWARMDECK_STATE_DIR=str(scratch / "before-state"))
        before_strict = dict(strict, PYTHONPATH=str(args.before.resolve()),
                             SWARMDECK_STATE_DIR=str(scratch / "before-strict-state"))
        for name, (argv, stdin, case_env) in list(cases.items())[2:]:
            cases[f"{name} (before)"] = (
                argv, stdin, before_strict if case_env is strict else before_env
            )
    # A settings cache is believed once written after the config settled (cache_settle.py),
    # as on a machine whose config was not edited a moment ago.
    time.sleep(SETTLE_NS / 1e9 + 0.1)
    try:
        for argv, stdin, case_env in cases.values():
            timed(argv, stdin, case_env)  # first call creates the store and the settings cache
        samples: dict[str, list[float]] = {name: [] for name in cases}
        for _ in range(args.runs):
            for name, (argv, stdin, case_env) in cases.items():
                samples[name].append(timed(argv, stdin, case_env, name))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    medians = {name: statistics.median(values) * 1000 for name, values in samples.items()}
    minimums = {name: min(values) * 1000 for name, values in samples.items()}
    bare = medians["bare venv python -c pass"]
    bare_path = medians["bare python3 -c pass (PATH)"]
    light = medians["hook, light Bash command"]
    cpu = {name: statistics.median(CPU_TIMES[name]) * 1000 for name in samples}
    bare_cpu = cpu["bare venv python -c pass"]
    rows = [
        "| case | median ms | × venv `python -c pass` | × `python3 -c pass` on PATH | min ms"
        " | CPU ms (median) | CPU × venv python |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, ms in medians.items():
        rows.append(
            f"| {name} | {ms:.1f} | {ms / bare:.2f} | {ms / bare_path:.2f}"
            f" | {minimums[name]:.1f} | {cpu[name]:.1f} | {cpu[name] / bare_cpu:.2f} |"
        )
    light_min = minimums["hook, light Bash command"] / minimums["bare venv python -c pass"]
    script = medians[f"hook, heavy in a {SCRIPT_LINES}-line script (strict: deny)"]
    parsed = medians["hook, light Bash command, parsed"]
    verdicts = [
        f"light hook / bare venv python: {light / bare:.2f} (goal {LIGHT_LIMIT:.2f}): "
        + ("within" if light <= LIGHT_LIMIT * bare else "OVER")
        + f"; fastest runs' ratio {light_min:.2f}; CPU time ratio"
        f" {cpu['hook, light Bash command'] / bare_cpu:.2f}",
        f"heavy hook: {medians['hook, heavy Bash command']:.0f} ms (limit 300 ms): "
        + ("within" if medians["hook, heavy Bash command"] <= 300 else "OVER")
        + f"; CPU {cpu['hook, heavy Bash command']:.0f} ms",
        f"heavy in a {SCRIPT_LINES}-line script: {script:.0f} ms (limit 300 ms): "
        + ("within" if script <= 300 else "OVER")
        + f"; CPU {cpu[f'hook, heavy in a {SCRIPT_LINES}-line script (strict: deny)']:.0f} ms",
        f"light command through the parser / bare venv python: {parsed / bare:.2f} (the"
        f" prefilter spares light commands {parsed - light:.1f} ms)",
    ]
    if args.before:
        before = medians["hook, light Bash command (before)"]
        before_cpu = cpu["hook, light Bash command (before)"]
        verdicts.append(
            f"before ({args.before}): light hook / bare venv python {before / bare:.2f}, CPU time"
            f" ratio {before_cpu / bare_cpu:.2f}; after / before {light / before:.2f}"
        )
    verdicts.append(prefilter_line())
    text = "\n".join(
        [
            f"Runs: {args.runs} per case, interleaved; {os.cpu_count()} cores, load average "
            f"{os.getloadavg()[0]:.1f} at the end; python {sys.version.split()[0]}; compiled "
            "bytecode cached (as installed).",
            "",
            *rows,
            "",
            *(f"- {line}" for line in verdicts),
        ]
    )
    print(text)
    if args.write:
        args.write.parent.mkdir(parents=True, exist_ok=True)
        header = "# Hook cost\n\nMeasured with `python bench/bench_hooks.py`.\n\n"
        previous = args.write.read_text() if args.write.exists() else ""
        marker = "\n## Transcripts\n"
        kept = previous[previous.index(marker) :] if marker in previous else ""
        args.write.write_text(header + text + "\n" + kept)
    return 0


if __name__ == "__main__":
    sys.exit(main())
