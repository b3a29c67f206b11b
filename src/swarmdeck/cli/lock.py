"""`swarmdeck lock`: workspace locks and work-directory owners."""

from __future__ import annotations

import argparse

from swarmdeck.cli.common import add_subcommands, example, exit_codes, flag_type, given_path
from swarmdeck.durations import seconds_or_zero
from swarmdeck.errors import UsageError
from swarmdeck.exitcodes import LOCK_ACQUIRE_CODES, ExitCode


def _add_lock(sub) -> None:
    p = sub.add_parser(
        "lock",
        help="workspace locks and work-directory owners",
        **example(
            "swarmdeck lock acquire . --timeout 600 && make release; swarmdeck lock release .",
            "swarmdeck lock show",
            "swarmdeck lock claim /work/scratch/bisect --purpose 'bisect the flaky test'",
            "swarmdeck lock cleanup --root /work/scratch",
        ),
    )
    inner = add_subcommands(p, "lock_command")
    session_help = "who holds it (default: $SWARMDECK_SESSION, else the holder's pid)"
    acquire = inner.add_parser(
        "acquire",
        help="take the lock of PATH, queueing while it is held",
        **example(
            "swarmdeck lock acquire . --timeout 600 && make release; swarmdeck lock release .",
            "swarmdeck lock acquire /work/repo --no-wait || echo held",
            after=exit_codes(
                "0 once it holds the lock", tuple(LOCK_ACQUIRE_CODES), LOCK_ACQUIRE_CODES
            ) + "\n\nPATH need not exist yet, but its folder must.",
        ),
    )
    acquire.add_argument("path", type=flag_type(given_path), metavar="PATH")
    acquire.add_argument("--session", help=session_help)
    acquire.add_argument(
        "--pid",
        type=int,
        help="the process that holds it (default: the nearest caller that outlives this"
        " command, past per-command shells and wrappers)",
    )
    acquire.add_argument("--command", dest="what", help="what it is for (default: its command)")
    acquire.add_argument("--no-wait", action="store_true", help="refuse (exit 78) if held")
    acquire.add_argument(
        "--timeout",
        type=flag_type(seconds_or_zero),
        metavar="S",
        help="stop queueing after S s (exit 253)",
    )
    acquire.set_defaults(handler=_lock_acquire)
    release = inner.add_parser(
        "release", help="give back the lock of PATH", **example("swarmdeck lock release .")
    )
    release.add_argument("path", type=flag_type(given_path), metavar="PATH")
    release.add_argument("--session", help=session_help)
    release.add_argument("--pid", type=int, help="the holder (default: as for acquire)")
    release.set_defaults(handler=_lock_release)
    show = inner.add_parser(
        "show",
        help="who holds the lock of PATH (every lock without PATH)",
        **example("swarmdeck lock show", "swarmdeck lock show /work/repo"),
    )
    show.add_argument("path", type=flag_type(given_path), metavar="PATH", nargs="?")
    show.set_defaults(handler=_lock_show)
    claim = inner.add_parser(
        "claim",
        help="create DIR under the work root, owned by a session",
        **example("swarmdeck lock claim /work/scratch/bisect --purpose 'bisect the flaky test'"),
    )
    claim.add_argument("path", type=flag_type(given_path), metavar="DIR")
    claim.add_argument("--session", help=session_help)
    claim.add_argument("--purpose", default="", help="what the directory is for")
    claim.set_defaults(handler=_lock_claim)
    cleanup = inner.add_parser(
        "cleanup",
        help="remove this session's directories no process uses; list the others",
        **example("swarmdeck lock cleanup --root /work/scratch"),
    )
    cleanup.add_argument("--root", help="the work root (default: config locks.work_root)")
    cleanup.add_argument("--session", help=session_help)
    cleanup.set_defaults(handler=_lock_cleanup)


def _lock_acquire(args: argparse.Namespace) -> int:
    from swarmdeck.actions.lock import acquire, holder_command, lock_holder, session_name

    holder = lock_holder(args.pid)
    got = acquire(
        args.path,
        session=session_name(args.session, holder.pid),
        command=args.what if args.what is not None else holder_command(holder.pid),
        holder=holder,
        wait=not args.no_wait,
        timeout=args.timeout,
    )
    verb = "already held" if got.already_held else "locked"
    print(f"{got.holder.path}: {verb} by session {got.holder.session}, process {holder.pid}")
    return ExitCode.OK


def _lock_release(args: argparse.Namespace) -> int:
    from pathlib import Path

    from swarmdeck.actions.lock import lock_holder, release, session_name

    holder = lock_holder(args.pid)
    before = release(args.path, session=session_name(args.session, holder.pid))
    print(f"{Path(args.path).resolve()}: released (was {before.describe()})")
    return ExitCode.OK


def _lock_show(args: argparse.Namespace) -> int:
    from swarmdeck.actions.lock import check_lock_folders
    from swarmdeck.probes.locks import all_locks, read_lock

    check_lock_folders()
    states = [read_lock(args.path)] if args.path else all_locks()
    for state in states:
        print(f"{state.path or args.path or state.lock_file}: {state.describe()}")
    if not states:
        print("no workspace locks")
    return ExitCode.OK


def _lock_claim(args: argparse.Namespace) -> int:
    import os

    from swarmdeck.actions.lock import caller_pid, session_name
    from swarmdeck.actions.workdir_claims import claim_directory
    from swarmdeck.config import load_config

    root = load_config().locks.work_root
    if root and os.path.dirname(os.path.realpath(args.path)) != os.path.realpath(root):
        raise UsageError(
            f"{args.path} is not a folder directly under locks.work_root {root}: claim one there,"
            " where status, the Locks panel and lock cleanup look for owned directories"
        )
    session = session_name(args.session, caller_pid())
    owner = claim_directory(args.path, session=session, purpose=args.purpose)
    print(f"{args.path}: owned by session {owner.session}")
    if not root:
        print(
            "no locks.work_root is set, so status and the Locks panel list no owned directories:"
            " set locks.work_root to the folder above it, or give `lock cleanup --root` it"
        )
    return ExitCode.OK


def _lock_cleanup(args: argparse.Namespace) -> int:
    from swarmdeck.actions.lock import caller_pid, session_name
    from swarmdeck.actions.workdir_claims import cleanup
    from swarmdeck.config import load_config

    root = args.root or load_config().locks.work_root
    if not root:
        raise UsageError("lock cleanup needs --root or locks.work_root in the config")
    report = cleanup(root, session=session_name(args.session, caller_pid()))
    for path in report.removed:
        print(f"removed {path}")
    for kept in report.kept:
        print(f"kept {kept.directory}: {kept.reason}")
    if report.unchecked:
        print(unchecked_line(report.unchecked, removed=bool(report.removed)))
    return ExitCode.OK


SHOWN_PIDS = 5
"""How many of the processes cleanup could not inspect are named by pid; the rest are counted."""


def unchecked_line(pids: tuple[int, ...], *, removed: bool) -> str:
    """What it means that cleanup could not inspect `pids` (see workdir_claims.cleanup): they did
    not hold any directory back, so one it removed may have been in use by them."""
    from swarmdeck.words import counted

    named = ", ".join(map(str, pids[:SHOWN_PIDS])) + (", …" if len(pids) > SHOWN_PIDS else "")
    which = f"{'pid' if len(pids) == 1 else 'pids'} {named}"
    if removed:
        them = "it" if len(pids) == 1 else "them"
        after = f"a directory removed above may have been in use by {them}"
    elif len(pids) == 1:
        after = "nothing was removed, so it lost no directory"
    else:
        after = "nothing was removed, so none of them lost a directory"
    return (
        f"{counted(len(pids), 'process', plural='processes')} ({which}) could not be inspected"
        f" (another user's, or more privileged than you): {after}"
    )


ADDERS = {
    "lock": _add_lock,
}
"""The subcommands this module adds, by name."""
