"""`swarmdeck watch`: the headless watchdog, one pass or a loop, and `--wake` for a main agent.

`watch --wake` is how a Claude Code main agent is woken by a finding: Claude Code wakes an agent
when a background task it started finishes, so the agent keeps `swarmdeck watch --wake` running
in the background; it exits 0, with the finding printed, as soon as one concerns its session.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import dataclass, field

from swarmdeck.actions.jobrecord import SESSION_ENV
from swarmdeck.cli.common import context, example, flag_type, session_id
from swarmdeck.exitcodes import ExitCode


def _add_watch(sub) -> None:
    p = sub.add_parser(
        "watch",
        help="the headless watchdog (or: wait for a finding with --wake)",
        **example(
            "swarmdeck watch --once",
            "swarmdeck watch --json | jq -c '.fired[]'",
            "swarmdeck watch --wake    # as a background Bash task of a main agent",
        ),
    )
    p.add_argument("--once", action="store_true", help="one pass, then exit")
    p.add_argument("--json", action="store_true", help="one JSON object per pass")
    p.add_argument(
        "--wake", action="store_true",
        help="block until a new finding or alert concerns the session, print it, exit 0",
    )
    p.add_argument(
        "--session", type=flag_type(session_id), metavar="SID",
        help=f"the session --wake waits for (default: ${SESSION_ENV}, else any)",
    )
    p.set_defaults(handler=_watch)


def _watch(args: argparse.Namespace) -> int:
    from swarmdeck.probes.claude.sessions import SessionsProbe
    from swarmdeck.probes.host import CpuSampler
    from swarmdeck.probes.usage import UsageTracker
    from swarmdeck.snapshot import keep_session_titles, take_snapshot
    from swarmdeck.watchdog.loop import Watchdog, watch_loop

    config, store = context()
    engine = Watchdog(config, store)
    probe, sampler, usage = SessionsProbe(), CpuSampler(), UsageTracker()
    # The peers are read here too: with no control room open, only this loop reads them, so
    # "queued here while a peer fits it now" can fire headless, and the cached figures the
    # hook's reminder and a queued runner's hint read stay fresh.
    peers = None
    if config.hosts:
        from swarmdeck.probes.peer import PeerProber

        peers = PeerProber()

    def take():
        snapshot = take_snapshot(config, store, sampler, probe, usage, peers=peers)
        # Headless, this loop alone may see a session live: its title is kept for after.
        keep_session_titles(store, snapshot.sessions)
        return snapshot

    session = args.session or (os.environ.get(SESSION_ENV) if args.wake else None) or None
    started = time.time()
    woke: list[str] = []
    shown = _Shown()
    if args.wake:
        # Said once, on stderr: stdout is the finding alone, for the agent that waits for it.
        whom = f"session {session}" if session else "any session"
        print(f"swarmdeck: waiting for a finding to wake {whom}; Ctrl+C stops", file=sys.stderr,
              flush=True)

    def on_pass(report) -> bool:
        if args.wake:
            woke.extend(_wake_lines(store, started, session))
            return not woke
        if args.json:
            print(json.dumps(_pass_json(report, store)), flush=True)
        else:
            _print_pass(report, store, args.once, shown, config.watchdog.min_duration)
        return not args.once

    try:
        watch_loop(engine, take, on_pass, config.watchdog.interval)
    except KeyboardInterrupt:
        return ExitCode.OK
    finally:
        engine.close()
        if peers is not None:
            peers.close()
    if woke:
        print("\n".join(woke), flush=True)
    return ExitCode.OK


def _pass_json(report, store) -> dict[str, object]:
    """One pass as JSON; `open` is every open finding in the store, as the text shows them,
    whichever watchdog wrote them."""
    from dataclasses import asdict as as_json

    from swarmdeck.probes.store_rows import open_findings

    return {
        "at": time.time(),
        "writer": report.writer,
        "drafts": report.drafts,
        "fired": [as_json(f) for f in report.outcome.fired],
        "open": [as_json(f) for f in open_findings(store)],
        "closed": report.outcome.closed,
        "escalated": report.escalated,
    }


READER_NOTE = "another watchdog (the app's) holds the writer's lease: this one only reads"


@dataclass
class _Shown:
    """What a watch loop has printed so far: whether it said it only reads, and each finding
    it showed with the moment that finding began to show."""

    said_reader: bool = False
    fired_at: dict[int, float | None] = field(default_factory=dict)


def _print_pass(report, store, once: bool, shown: _Shown, min_duration: float) -> None:
    """One pass for a person, each finding by the id `swarmdeck kills --request` takes and how
    long it has been open. With --once, every open finding, or when there is none, the
    conditions holding that show once they have held `min_duration`; in the loop, what began
    to show since the last pass. A loop that only reads cannot see what fired in its own pass, so it
    prints the open findings it has not shown yet (a finding that fires again shows again),
    after saying once that it only reads."""
    from swarmdeck.printable import printable
    from swarmdeck.probes.store_rows import open_findings
    from swarmdeck.views.records import finding_age

    if once:
        lines = open_findings(store)
    elif report.writer:
        lines = report.outcome.fired
    else:
        if not shown.said_reader:
            print(READER_NOTE, flush=True)
            shown.said_reader = True
        lines = [f for f in open_findings(store) if shown.fired_at.get(f.id) != f.fired_at]
    for finding in lines:
        shown.fired_at[finding.id] = finding.fired_at
    now = time.time()
    stamp = time.strftime("%H:%M:%S", time.localtime(now))
    for finding in lines:
        print(f"{stamp} finding {finding.id} [{finding.severity}] {finding.rule}:"
              f" {printable(finding.subject)} — {printable(finding.message)}"
              f" (open for {finding_age(finding, now)})", flush=True)
    for line in report.escalated:
        print(f"{stamp} [critical] {line}", flush=True)
    if once and not lines:
        role = "" if report.writer else " (another watchdog holds the writer's lease)"
        print(_holding_line(store, min_duration, now) or "no open findings", end="")
        print(role)


def _holding_line(store, min_duration: float, now: float) -> str:
    """"N conditions holding, shows after S s: RULE on SUBJECT (in T s), …" for what the
    watchdog sees but does not show yet; "" when nothing is holding."""
    from swarmdeck.durations import age_text
    from swarmdeck.printable import printable
    from swarmdeck.probes.store_rows import holding_findings
    from swarmdeck.words import counted

    holding = holding_findings(store)
    if not holding:
        return ""
    each = ", ".join(
        f"{finding.rule} on {printable(finding.subject)} (in"
        f" {age_text(finding.first_seen_at + min_duration - now)})"
        for finding in holding[:3]
    )
    more = f", and {len(holding) - 3} more" if len(holding) > 3 else ""
    return (f"{counted(len(holding), 'condition')} holding, shows after {min_duration:g} s:"
            f" {each}{more}")


def _wake_lines(store, started: float, session: str | None) -> list[str]:
    """A few lines per new finding (and, with no session, per new alert)."""
    from swarmdeck.printable import printable
    from swarmdeck.probes.store_rows import open_alerts
    from swarmdeck.watchdog.findings import findings_fired_since
    from swarmdeck.watchdog.kills import request_command

    lines: list[str] = []
    for finding in findings_fired_since(store, started, session):
        command = request_command(finding)
        act = f"{command}   (then a person approves it)" if command else "swarmdeck status"
        lines += [
            f"swarmdeck watchdog: finding {finding.id} {finding.rule} [{finding.severity}]",
            f"  subject: {printable(finding.subject)}",
            f"  what:    {printable(finding.message)}",
            f"  do:      {finding.advice or 'look at it'}",
            f"  act:     {act}",
        ]
    if session is None or not lines:
        for alert in open_alerts(store):
            if alert.last_seen_at >= started and (session is None or session in alert.message):
                lines += [
                    f"swarmdeck alert [{alert.level}]: {printable(alert.message)}",
                    "  act:     swarmdeck status",
                ]
    return lines


ADDERS = {"watch": _add_watch}
"""The subcommands this module adds, by name."""
