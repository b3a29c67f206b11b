"""`swarmdeck guards`: each guard, its mode here, what it refuses, and its last 24 hours."""

from __future__ import annotations

import argparse
import json
import time

from swarmdeck.cli.common import context, example
from swarmdeck.exitcodes import ExitCode


def _add_guards(sub) -> None:
    p = sub.add_parser(
        "guards",
        help="what the hooks refuse: each guard's mode, and how often it reminded or denied",
        **example("swarmdeck guards", "swarmdeck guards --json"),
    )
    p.add_argument("--json", action="store_true", help="print them as JSON")
    p.set_defaults(handler=_guards)


def guard_rows(config, store, now: float) -> list[dict[str, object]]:
    """One row per guard, in priority order: name, mode, what it looks at and refuses, counts."""
    from swarmdeck.hooks.guard_table import GUARDS, guard_settings
    from swarmdeck.hooks.guards import COUNT_WINDOW, guard_counts

    modes = guard_settings(config)["modes"]
    with store.read() as conn:
        counts = guard_counts(conn, now - COUNT_WINDOW)
    return [
        {
            "guard": guard.name,
            "mode": modes[guard.name],
            "key": f"guards.{guard.key}",
            "looks_at": guard.looks_at,
            "refuses": guard.refuses,
            "reminded_24h": counts[guard.name]["remind"],
            "denied_24h": counts[guard.name]["deny"],
        }
        for guard in GUARDS
    ]


def _guards(args: argparse.Namespace) -> int:
    from swarmdeck.hooks.guard_table import heavy_threads

    config, store = context()
    rows = guard_rows(config, store, time.time())
    threads = heavy_threads(config)
    if args.json:
        print(json.dumps(
            {"preset": config.guards.preset, "heavy_threads": threads, "guards": rows}, indent=2
        ))
        return ExitCode.OK
    print(f"preset: {config.guards.preset} (guards.preset; `swarmdeck hooks install --strict`"
          " sets strict)")
    print(f"heavy threads here: {threads} (a dispatch prompt's `thread cap: {threads}`;"
          " cores.heavy_threads, else cores - 1)")
    width = max(len(str(row["guard"])) for row in rows)
    print(f"{'guard':<{width}}  {'mode':<6}  {'24h reminded':>12}  {'denied':>6}  refuses")
    for row in rows:
        print(f"{row['guard']:<{width}}  {row['mode']:<6}  {row['reminded_24h']:>12}  "
              f"{row['denied_24h']:>6}  {row['refuses']} [{row['looks_at']}]")
    return ExitCode.OK


ADDERS = {"guards": _add_guards}
"""The subcommands this module adds, by name."""
