"""`swarmdeck handover AGENT_ID`: what a new subagent needs to continue a stopped one."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from swarmdeck.cli.common import example, exit_codes
from swarmdeck.exitcodes import ExitCode


def _add_handover(sub) -> None:
    p = sub.add_parser(
        "handover",
        help="a stopped subagent's task, files, commands and last words, for the one taking over",
        **example(
            "swarmdeck handover a1b2c3d4          the text of a new dispatch prompt",
            "swarmdeck handover a1b2c3d4 --json",
            after=exit_codes("0 once printed", (ExitCode.USAGE,), {
                ExitCode.USAGE: "usage, or no transcript of that agent under $CLAUDE_CONFIG_DIR",
            }),
        ),
    )
    p.add_argument("agent_id", metavar="AGENT_ID", help="the subagent's id (the Agents panel)")
    p.add_argument("--json", action="store_true", help="the facts and the text as JSON")
    p.set_defaults(handler=_handover)


def _handover(args: argparse.Namespace) -> int:
    from swarmdeck import paths
    from swarmdeck.errors import UsageError
    from swarmdeck.probes.claude.handover import HandoverError, read_handover

    try:
        handover = read_handover(Path(paths.claude_dir()), args.agent_id)
    except HandoverError as error:
        raise UsageError(str(error)) from None
    if args.json:
        print(json.dumps(handover.to_json(), indent=2, ensure_ascii=False))
    else:
        print(handover.text())
    return 0


ADDERS = {"handover": _add_handover}
"""The subcommands this module adds, by name."""
