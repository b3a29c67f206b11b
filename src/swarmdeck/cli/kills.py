"""`swarmdeck kills`, `approve ID`, `deny ID`: kill requests, decided by a person.

An approval that is refused (the process is not supervised, or its pid now names another
process) exits 78 with the reason on stderr; nothing was signalled. So does one asked from
inside the tree it would stop (an agent approving its own session's kill), which leaves the
request pending for someone outside that tree. A request for a finding whose
job has already ended, or whose process has (its pid free or a zombie, though its job's row
still says running), is refused the same way (78), and nothing is recorded.
"""

from __future__ import annotations

import argparse
import getpass
import json
import textwrap
import time

from swarmdeck.cli.common import context, example, flag_type, record_id
from swarmdeck.exitcodes import ExitCode


def _add_kills(sub) -> None:
    p = sub.add_parser(
        "kills",
        help="kill requests waiting for a decision, and recent ones",
        **example("swarmdeck kills", "swarmdeck kills --request 12"),
    )
    p.add_argument("--json", action="store_true", help="print them as JSON")
    p.add_argument(
        "--request", type=flag_type(record_id), metavar="FINDING_ID",
        help="ask for the finding's process to be stopped (a person approves it)",
    )
    p.set_defaults(handler=_kills)


def _add_approve(sub) -> None:
    p = sub.add_parser(
        "approve",
        help="approve a kill request: stop its process tree",
        **example("swarmdeck kills", "swarmdeck approve 3"),
    )
    p.add_argument(
        "id", type=flag_type(record_id), metavar="ID",
        help="the kill request's id (`swarmdeck kills`)",
    )
    p.set_defaults(handler=_approve)


def _add_deny(sub) -> None:
    p = sub.add_parser(
        "deny",
        help="deny a kill request: nothing is signalled",
        **example("swarmdeck deny 3"),
    )
    p.add_argument(
        "id", type=flag_type(record_id), metavar="ID",
        help="the kill request's id (`swarmdeck kills`)",
    )
    p.set_defaults(handler=_deny)


def _kills(args: argparse.Namespace) -> int:
    from dataclasses import asdict as as_json

    from swarmdeck.errors import UsageError
    from swarmdeck.printable import printable
    from swarmdeck.watchdog.findings import finding_by_id
    from swarmdeck.watchdog.kills import recent_kill_requests, request_kill

    _, store = context()
    if args.request is not None:
        finding = finding_by_id(store, args.request)
        if finding is None:
            raise UsageError(f"no finding {args.request}: `swarmdeck watch --once` lists them")
        made = request_kill(store, finding, getpass.getuser(), time.time())
        print(f"kill request {made.id}: pid {made.pid} ({printable(made.command[:80])});"
              f" approve with `swarmdeck approve {made.id}`")
        return ExitCode.OK
    requests = recent_kill_requests(store)
    if args.json:
        print(json.dumps([{**as_json(r), "result": result} for r, result in requests], indent=2))
        return ExitCode.OK
    if not requests:
        print("no kill requests")
    for request, result in requests:
        command = textwrap.shorten(printable(request.command), 60, placeholder=" …")
        reason = textwrap.shorten(printable(request.reason), 80, placeholder=" …")
        print(f"{request.id:>4} {request.state:<8} {request.host} pid {request.pid}"
              f" {printable(request.user or '?')}  {command}  — {reason}"
              + (f"  → {printable(result)}" if result else ""))
    return ExitCode.OK


def _approve(args: argparse.Namespace) -> int:
    from swarmdeck.errors import RefusedError
    from swarmdeck.watchdog.kills import approve

    _, store = context()
    outcome = approve(store, args.id, getpass.getuser(), time.time())
    if outcome.result.startswith("refused"):
        raise RefusedError(f"kill request {args.id} {outcome.result}: {outcome.detail}")
    print(f"kill request {args.id}: {outcome.said}")
    return ExitCode.OK


def _deny(args: argparse.Namespace) -> int:
    from swarmdeck.watchdog.kills import deny

    _, store = context()
    deny(store, args.id, getpass.getuser(), time.time())
    print(f"kill request {args.id}: denied; nothing was signalled")
    return ExitCode.OK


ADDERS = {"kills": _add_kills, "approve": _add_approve, "deny": _add_deny}
"""The subcommands this module adds, by name."""
