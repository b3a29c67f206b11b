"""`swarmdeck alerts`: the open alerts, and `--ack ID` when a person has read one.

An acknowledged alert leaves the Alerts panel and this list; raised again, it opens again.
"""

from __future__ import annotations

import argparse
import getpass
import json
import time

from swarmdeck.cli.common import context, example, flag_type, record_id
from swarmdeck.exitcodes import ExitCode


def _add_alerts(sub) -> None:
    p = sub.add_parser(
        "alerts",
        help="the open alerts; --ack ID once you have read one",
        **example("swarmdeck alerts", "swarmdeck alerts --ack 4"),
    )
    p.add_argument("--json", action="store_true", help="print them as JSON")
    p.add_argument(
        "--ack", type=flag_type(record_id), metavar="ID",
        help="acknowledge the open alert ID (`swarmdeck alerts` lists the ids)",
    )
    p.set_defaults(handler=_alerts)


def _alerts(args: argparse.Namespace) -> int:
    from dataclasses import asdict as as_json

    from swarmdeck.durations import age_text
    from swarmdeck.errors import UsageError
    from swarmdeck.printable import printable
    from swarmdeck.probes.store_rows import open_alerts
    from swarmdeck.watchdog.alerts import acknowledge_alert, why_not_open

    _, store = context()
    if args.ack is not None:
        if acknowledge_alert(store, args.ack, getpass.getuser(), time.time()):
            print(f"alert {args.ack} acknowledged")
            return ExitCode.OK
        why = why_not_open(store, args.ack)
        if why is None:
            raise UsageError(f"no alert {args.ack}: `swarmdeck alerts` lists the open ones")
        # Acknowledging twice is what the person meant already: said, and not an error.
        print(f"alert {args.ack} was {why}")
        return ExitCode.OK
    alerts = open_alerts(store)
    if args.json:
        print(json.dumps([as_json(alert) for alert in alerts], indent=2))
        return ExitCode.OK
    if not alerts:
        print("no open alerts")
    now = time.time()
    for alert in alerts:
        print(f"{alert.id:>4} {alert.level:<8} {alert.host or '-'}  ×{alert.count}"
              f"  {age_text(now - alert.last_seen_at)} ago  {printable(alert.message)}")
    return ExitCode.OK


ADDERS = {"alerts": _add_alerts}
"""The subcommands this module adds, by name."""
