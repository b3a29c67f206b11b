"""`swarmdeck peer check|run|cleanup HOST` (run on the second host), and the two commands a peer
runs for the host that drives it (`peer remote-start`, `peer remote-stop`)."""

from __future__ import annotations

import argparse
import sys

from swarmdeck.cli.common import (
    ArgumentParser,
    add_subcommands,
    add_unlisted,
    context,
    example,
    flag_type,
    record_id,
    thread_count,
)


def _command(args: argparse.Namespace) -> list[str]:
    command = list(args.command)
    return command[1:] if command[:1] == ["--"] else command


HOST_HELP = "a host of the config's [[hosts]], by its name"


def _add_peer(sub) -> None:
    p = sub.add_parser(
        "peer",
        help="run a job on a second host, check one, clean up after one",
        usage="swarmdeck peer {check,run,attach,cleanup} HOST ...",
        **example(
            "swarmdeck peer check big2",
            "swarmdeck peer run big2 --cap 8G --label tests --fetch report.xml -- pytest -q",
            "swarmdeck peer attach big2 17",
            "swarmdeck peer cleanup big2",
        ),
    )
    peer = add_subcommands(p, "peer_command")

    check = peer.add_parser(
        "check",
        help="is HOST usable for peer runs (exit 0), or why not (78)",
        **example(
            "swarmdeck peer check big2",
            "swarmdeck peer check big2 && swarmdeck peer run big2 -- make test",
        ),
    )
    check.add_argument("host", metavar="HOST", help=HOST_HELP)
    check.set_defaults(handler=_check)

    run = peer.add_parser(
        "run",
        help="copy this checkout to HOST, run CMD there caged, fetch results, leave nothing",
        usage=RUN_USAGE,
        **example(RUN_EXAMPLE),
    )
    run.add_argument("host", metavar="HOST", help=HOST_HELP)
    _add_run_options(run)
    # What follows HOST is read again by `_run_options`: a positional before a command taken as
    # it is swallows the options after it.
    run.add_argument(
        "rest", nargs=argparse.REMAINDER, metavar="-- CMD...", help="the command, after --"
    )
    run.set_defaults(handler=_run, ends_process=True)

    attach = peer.add_parser(
        "attach",
        help="follow again a run on HOST whose driver died",
        **example("swarmdeck peer attach big2 17", "swarmdeck peer attach big2 17 --fetch out/"),
    )
    attach.add_argument("host", metavar="HOST", help=HOST_HELP)
    attach.add_argument(
        "job", type=flag_type(record_id), metavar="JOB", help="its job id in the ledger here"
    )
    attach.add_argument(
        "--fetch", action="append", default=[], metavar="PATH",
        help="a file or folder of the job's tree to bring back when it ends (repeatable)",
    )
    attach.set_defaults(handler=_attach, ends_process=True)

    cleanup = peer.add_parser(
        "cleanup",
        help="stop and remove runs on HOST whose driver died",
        **example("swarmdeck peer cleanup big2"),
    )
    cleanup.add_argument("host", metavar="HOST", help=HOST_HELP)
    cleanup.set_defaults(handler=_cleanup)

    # Run by the driving host over ssh, never by a person: no line in the help.
    start = add_unlisted(p, "remote-start", description="(on a peer) start a driven job detached")
    start.add_argument("run_dir", metavar="DIR")
    start.add_argument("--workload", default=None, help="the driver's workload fingerprint")
    start.add_argument("command", nargs=argparse.REMAINDER)
    start.set_defaults(handler=_remote_start)

    stop = add_unlisted(p, "remote-stop", description="(on a peer) stop a driven job's tree")
    stop.add_argument("pid", type=int)
    stop.add_argument("start_ticks", type=int)
    stop.add_argument("signal", type=int)
    stop.set_defaults(handler=_remote_stop)


RUN_USAGE = (
    "swarmdeck peer run HOST [--cap SIZE] [--label L] [--threads N] [--fetch PATH]... "
    "[--detach] [--untracked] [--accept-toolchain] -- CMD..."
)


RUN_EXAMPLE = "swarmdeck peer run big2 --cap 8G --label tests --fetch report.xml -- pytest -n 16"


def _run_options() -> ArgumentParser:
    """What follows HOST in `peer run`: parsed apart, since a positional before a command
    taken as it is would swallow the options."""
    run = ArgumentParser(prog="swarmdeck peer run", usage=RUN_USAGE, **example(RUN_EXAMPLE))
    _add_run_options(run)
    run.add_argument("command", nargs=argparse.REMAINDER, help="the command, after --")
    return run


def _add_run_options(run: argparse.ArgumentParser) -> None:
    """`peer run`'s options, given before HOST or after it."""
    run.add_argument("--cap", metavar="SIZE", help="hard memory cap there (512M, 8G, 70%%)")
    run.add_argument("--label", metavar="L", help="name shown in the Jobs panel")
    run.add_argument("--threads", type=thread_count, metavar="N", help="threads the job will use")
    run.add_argument(
        "--fetch", action="append", default=[], metavar="PATH",
        help="a file or folder of the job's tree to bring back here (repeatable)",
    )
    run.add_argument(
        "--detach", action="store_true", help="return once it started; a driver follows it"
    )
    run.add_argument(
        "--untracked", action="store_true", help="also copy untracked files git does not ignore"
    )
    run.add_argument(
        "--accept-toolchain", action="store_true", help="run even where toolchains differ"
    )


def _check(args: argparse.Namespace) -> int:
    from swarmdeck.actions.peer_run import check_peer
    from swarmdeck.config import load_config
    from swarmdeck.exitcodes import ExitCode

    report = check_peer(load_config(), args.host)
    print(f"peer {args.host}")
    for line in report.lines:
        print(line)
    if report.problem:
        print(f"swarmdeck: not usable: {report.problem}", file=sys.stderr)
        return int(ExitCode.REFUSED)
    print(f"usable: `swarmdeck peer run {args.host} -- CMD` runs there")
    return 0


def _run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from swarmdeck.actions.peer_run import PeerRunRequest, peer_run

    # Options given before HOST are in `args` already; those after it are added to them.
    args = _run_options().parse_args(args.rest, args)
    request = PeerRunRequest(
        host=args.host,
        argv=_command(args),
        cap=args.cap,
        label=args.label,
        fetch=tuple(args.fetch),
        detach=args.detach,
        untracked=args.untracked,
        accept_toolchain=args.accept_toolchain,
        threads=args.threads,
        cwd=Path.cwd(),
    )
    config, store = context()
    try:
        return peer_run(config, store, request)
    finally:
        store.close()


def _attach(args: argparse.Namespace) -> int:
    from swarmdeck.actions.peer_run import attach_peer

    config, store = context()
    try:
        return attach_peer(config, store, args.host, args.job, tuple(args.fetch))
    finally:
        store.close()


def _cleanup(args: argparse.Namespace) -> int:
    from swarmdeck.actions.peer_run import cleanup_peer

    config, store = context()
    try:
        for line in cleanup_peer(config, store, args.host):
            print(line)
    finally:
        store.close()
    return 0


def _remote_start(args: argparse.Namespace) -> int:
    from pathlib import Path

    from swarmdeck.actions.hosts.peer_side import identity, reap, start, start_line

    child = start(Path(args.run_dir), _command(args), args.workload)
    print(start_line(identity(child)), flush=True)
    reap(child)
    return 0


def _remote_stop(args: argparse.Namespace) -> int:
    from swarmdeck.actions.hosts.peer_side import stop
    from swarmdeck.probes.procs import ProcessIdentity

    print(stop(ProcessIdentity(args.pid, args.start_ticks), args.signal))
    return 0


ADDERS = {"peer": _add_peer}
"""The subcommands this module adds, by name."""
