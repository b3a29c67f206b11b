"""`swarmdeck demo`: the control room on a self-contained scene, removed again on quit."""

from __future__ import annotations

import argparse
import signal
import sys

from swarmdeck.cli.common import example, exit_codes, flag_type, need_terminal
from swarmdeck.durations import seconds_above_zero
from swarmdeck.exitcodes import CONTROL_ROOM_CODES, ExitCode

NOTE = """\
The scene lives in one temporary folder (its own state, config and Claude Code folder), caps
its jobs in a small slice it makes itself and reaches a second host over SSH on 127.0.0.1.
Quitting stops every process it started and removes its cgroups and its folder; what a demo
killed before it could do so left behind is removed by the next `swarmdeck demo`. It never
stops or removes anything it did not make: --slice must name a cgroup that does not exist yet,
outside the machine's default slice (a cgroup holding processes of others is left, and said so).
"""


def _add_demo(sub) -> None:
    p = sub.add_parser(
        "demo",
        help="a self-contained scene: sample sessions, caged jobs, a loopback peer",
        **example(
            "swarmdeck demo                    "
            "# the control room on the scene; q quits and cleans up",
            "swarmdeck demo --no-ui --seconds 60",
            after=NOTE + "\n" + exit_codes(
                "0 once quit (q, SIGTERM, the end of --seconds)", tuple(CONTROL_ROOM_CODES),
                CONTROL_ROOM_CODES,
            ),
        ),
    )
    p.add_argument(
        "--no-ui", action="store_true", help="run the scene without the control room"
    )
    p.add_argument(
        "--seconds",
        type=flag_type(seconds_above_zero),
        metavar="S",
        help="with --no-ui: stop after S seconds (default: until interrupted)",
    )
    p.add_argument(
        "--step",
        type=flag_type(seconds_above_zero),
        default=2.0,
        metavar="S",
        help="seconds between the sessions' transcript steps (default 2)",
    )
    p.add_argument(
        "--slice",
        type=flag_type(_slice_name),
        metavar="NAME",
        help="a new cgroup for the scene's jobs, made and removed by the demo; refused (251)"
        " if it exists (default: swarmdeck-demo-PID)",
    )
    p.add_argument(
        "--uncaged",
        action="store_true",
        help="run the jobs without memory cages, as where none can be set up",
    )
    p.set_defaults(handler=_demo)


def _slice_name(text: str) -> str:
    """`--slice NAME` if it names a cgroup the scene may make, by the rule memory.slice keeps;
    else ValueError saying why."""
    from swarmdeck.config import slice_problem

    problem = slice_problem(text)
    if problem is not None:
        raise ValueError(problem)
    return text


class _Stopped(Exception):
    """TERM or HUP arrived outside the control room (which ends on them by itself): end the
    scene as a quit would; a HUP (the terminal went away) exits 129."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _stop(signum: int, frame: object) -> None:
    raise _Stopped(signum)


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _demo(args: argparse.Namespace) -> int:
    from swarmdeck.demo import scene as scenes
    from swarmdeck.demo.slices import SliceRefused, slice_refusal
    from swarmdeck.errors import UsageError

    if args.seconds is not None and not args.no_ui:
        raise UsageError("--seconds needs --no-ui: the control room runs until q quits it")
    if not args.no_ui:
        need_terminal("`swarmdeck demo --no-ui` runs the scene without it")
    # Before anything is swept or made; one the sweep may free (a killed demo's slice) is
    # refused by the scene only if still there.
    problem = slice_refusal(args.slice, existing=False) if args.slice is not None else None
    if problem:
        raise SliceRefused(problem)
    settings = scenes.SceneSettings(
        step=args.step, slice_name=args.slice, uncaged=args.uncaged, watchdog=args.no_ui
    )
    scenes.sweep_abandoned(say=_say)
    scene = scenes.Scene(settings)
    previous = {sig: signal.signal(sig, _stop) for sig in (signal.SIGTERM, signal.SIGHUP)}
    refused = False
    try:
        scene.start()
        print(scene.summary(), flush=True)
        if args.no_ui:
            print(f"look at it from another shell: {_looking(scene)}", flush=True)
        return _headless(args.seconds) if args.no_ui else _control_room(scene)
    except _Stopped as stopped:
        return ExitCode.TERMINAL_GONE if stopped.signum == signal.SIGHUP else ExitCode.OK
    except KeyboardInterrupt:
        return ExitCode.OK
    except SliceRefused:
        refused = True  # nothing of the scene was made but its folder, which start removed
        raise
    finally:
        # A second TERM while cleaning up must not leave the scene half removed.
        for sig in previous:
            signal.signal(sig, signal.SIG_IGN)
        scene.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if not refused:
            _say("demo scene removed")


def _looking(scene) -> str:
    """The command line that shows a headless scene: `status` with the scene's own folders."""
    import shlex

    folders = scene.environment().items()
    return " ".join(f"{name}={shlex.quote(value)}" for name, value in folders) + " swarmdeck status"


def _headless(seconds: float | None) -> int:
    import time

    end = None if seconds is None else time.monotonic() + seconds
    while end is None or time.monotonic() < end:
        time.sleep(0.2 if end is None else max(0.0, min(0.2, end - time.monotonic())))
    return ExitCode.OK


def _control_room(scene) -> int:
    from swarmdeck.app.main import run_app
    from swarmdeck.config import load_config

    assert scene.store is not None
    return run_app(load_config(), scene.store)


ADDERS = {
    "demo": _add_demo,
}
"""The subcommands this module adds, by name."""
