"""`swarmdeck status` and `swarmdeck probe`: one snapshot, for a person or for a peer."""

from __future__ import annotations

import argparse
from functools import partial

from swarmdeck.cli.common import context, example
from swarmdeck.exitcodes import ExitCode


def _add_status(sub) -> None:
    p = sub.add_parser(
        "status",
        help="one snapshot of everything the control room shows",
        **example(
            "swarmdeck status", "swarmdeck status --json | jq '.jobs[] | {label, state, exit_code}'"
        ),
    )
    p.add_argument("--json", action="store_true", help="print the snapshot JSON")
    p.add_argument(
        "--all", action="store_true", help="every finished job, not only the most recent"
    )
    p.set_defaults(handler=_status)


def _status(args: argparse.Namespace) -> int:
    from swarmdeck.snapshot import one_shot_snapshot

    config, store = context()
    snapshot = _with_peers(
        config, store, partial(one_shot_snapshot, reconciled=True, all_jobs=args.all)
    )
    if args.json:
        import json
        import time

        from swarmdeck.cli.guards import guard_rows

        data = snapshot.to_json()
        # A list of flat objects, as every top-level key of the snapshot (DESIGN.md).
        data["guards"] = [
            {"name": row["guard"], "mode": row["mode"], "reminded_24h": row["reminded_24h"],
             "denied_24h": row["denied_24h"]}
            for row in guard_rows(config, store, time.time())
        ]
        print(json.dumps(data, indent=2))
    else:
        from swarmdeck.status_report import print_status

        print_status(snapshot)
    return ExitCode.OK


def _with_peers(config, store, take):
    """`take(config, store, peers=…)` with the configured peers read too, and let go after."""
    if not config.hosts:
        return take(config, store)
    from swarmdeck.probes.peer import PeerProber

    prober = PeerProber()
    try:
        return take(config, store, peers=prober)
    finally:
        prober.close()


def _add_probe(sub) -> None:
    p = sub.add_parser(
        "probe",
        help="this host's snapshot (what a peer runs over ssh)",
        **example(
            "swarmdeck probe --json              # one line of JSON",
            "ssh big2 swarmdeck probe --json     # what the control room reads from a peer",
        ),
    )
    p.add_argument("--json", action="store_true", required=True, help="print the snapshot JSON")
    p.set_defaults(handler=_probe)


def _probe(args: argparse.Namespace) -> int:
    import json

    from swarmdeck.snapshot import one_shot_snapshot

    config, store = context()
    print(json.dumps(one_shot_snapshot(config, store).to_json()))
    return ExitCode.OK


ADDERS = {
    "status": _add_status,
    "probe": _add_probe,
}
"""The subcommands this module adds, by name."""
