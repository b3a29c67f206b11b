"""Command-line parsing: each subcommand hands its arguments to the packages that do the work.

Handlers import their modules lazily, so `swarmdeck hook …`, which runs before every Bash
call an agent makes, never pays for textual, rich or asyncssh.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence

from swarmdeck import __version__
from swarmdeck.errors import SwarmdeckError, UsageError
from swarmdeck.exitcodes import ExitCode

# Not `from typing import TYPE_CHECKING`: importing typing costs the hook path a tenth of its
# budget, and this name is all that type checkers and linters look for.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NoReturn

Handler = Callable[[argparse.Namespace], int]


class ArgumentParser(argparse.ArgumentParser):
    """argparse that reports a usage mistake as one line and exit 251, as every error here."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see '{self.prog} --help')")


def _context():
    """The effective config and the state store every command but `hook` works with."""
    from swarmdeck.config import load_config
    from swarmdeck.state import StateStore

    return load_config(), StateStore.open_default()


# ---- ui ---------------------------------------------------------------------------------------


def _add_ui(sub) -> None:
    p = sub.add_parser("ui", help="the control room (the default)")
    p.add_argument(
        "--readonly", action="store_true", help="hide every action that changes anything"
    )
    p.set_defaults(handler=_ui)


def _ui(args: argparse.Namespace) -> int:
    from swarmdeck.app.main import run_app

    config, store = _context()
    return run_app(config, store, readonly=getattr(args, "readonly", False))


# ---- status / probe ---------------------------------------------------------------------------


def _add_status(sub) -> None:
    p = sub.add_parser("status", help="one snapshot of everything the control room shows")
    p.add_argument("--json", action="store_true", help="print the snapshot JSON")
    p.set_defaults(handler=_status)


def _status(args: argparse.Namespace) -> int:
    from swarmdeck.snapshot import one_shot_snapshot

    config, store = _context()
    snapshot = _with_peers(config, store, one_shot_snapshot)
    if args.json:
        import json

        print(json.dumps(snapshot.to_json(), indent=2))
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
    p = sub.add_parser("probe", help="this host's snapshot (what a peer runs over ssh)")
    p.add_argument("--json", action="store_true", required=True, help="print the snapshot JSON")
    p.set_defaults(handler=_probe)


def _probe(args: argparse.Namespace) -> int:
    import json

    from swarmdeck.snapshot import one_shot_snapshot

    config, store = _context()
    print(json.dumps(one_shot_snapshot(config, store).to_json()))
    return ExitCode.OK


# ---- config -----------------------------------------------------------------------------------


def _add_config(sub) -> None:
    p = sub.add_parser("config", help="the effective configuration")
    inner = p.add_subparsers(dest="config_command", required=True, parser_class=ArgumentParser)
    show = inner.add_parser("show", help="every key, its value and where the value came from")
    show.set_defaults(handler=_config_show)


def _config_show(args: argparse.Namespace) -> int:
    from swarmdeck.config import load_config
    from swarmdeck.status_report import print_config

    print_config(load_config())
    return ExitCode.OK


# ---- run --------------------------------------------------------------------------------------


def _add_run(sub) -> None:
    p = sub.add_parser(
        "run",
        help="run a command in a memory cage after booking its memory",
        usage="swarmdeck run [--cap SIZE] [--label L] [--threads N] [--unbounded] [--wait S] "
        "[--timeout S] [--detach] -- CMD...",
        epilog="The job finds in $SWARMDECK_SERIAL_FILE a file of its own (in the state folder, "
        "recorded in its ledger row): while it is serial on purpose (linking, one last test) it "
        "may write 'serial right now: REASON' into it, and remove it or write anything else "
        "when the phase ends. The Jobs panel shows the reason beside the job's cores figures, "
        "so a low thread count is read as intended, not as waste.",
    )
    p.add_argument("--cap", metavar="SIZE", help="hard memory cap (512M, 8G, 70%%)")
    p.add_argument("--label", metavar="L", help="name shown in the Jobs panel")
    p.add_argument("--threads", type=int, metavar="N", help="threads the job will use")
    p.add_argument(
        "--unbounded", action="store_true", help="may grow to the whole slice; killed first"
    )
    p.add_argument("--wait", type=float, metavar="S", help="seconds to queue for room")
    p.add_argument("--timeout", type=float, metavar="S", help="stop the job after S seconds")
    p.add_argument(
        "--detach", action="store_true", help="keep running after this terminal goes away"
    )
    p.add_argument("command", nargs=argparse.REMAINDER, help="the command, after --")
    p.set_defaults(handler=_run, ends_process=True)


def _run(args: argparse.Namespace) -> int:
    from swarmdeck.actions.runner import RunRequest, run_job

    command = list(args.command)
    if command[:1] == ["--"]:
        command = command[1:]
    request = RunRequest(
        argv=command,
        cap=args.cap,
        label=args.label,
        threads=args.threads,
        unbounded=args.unbounded,
        wait=args.wait,
        timeout=args.timeout,
        detach=args.detach,
    )
    config, store = _context()
    try:
        return run_job(config, store, request)
    finally:
        # Here rather than at interpreter exit, which `main` skips for a runner.
        store.close()


# ---- gpu-run ----------------------------------------------------------------------------------


def _add_gpu_run(sub) -> None:
    p = sub.add_parser(
        "gpu-run",
        help="free the GPUs (stop allowlisted services), then run a command",
        usage="swarmdeck gpu-run [--wait] [--wait-limit S] -- CMD...",
    )
    p.add_argument(
        "--wait",
        action="store_true",
        help="wait while a process not on the allowlist holds a GPU (default: refuse, exit 78)",
    )
    p.add_argument("--wait-limit", type=float, metavar="S", help="give up waiting after S seconds")
    p.add_argument("command", nargs=argparse.REMAINDER, help="the command, after --")
    p.set_defaults(handler=_gpu_run)


def _gpu_run(args: argparse.Namespace) -> int:
    from swarmdeck.actions.quiesce import GpuRunSettings, gpu_run
    from swarmdeck.config import load_config

    command = list(args.command)
    if command[:1] == ["--"]:
        command = command[1:]
    gpu = load_config().gpu
    settings = GpuRunSettings(
        allowlist=gpu.allowlist,
        stop_commands=gpu.stop_commands,
        wait=args.wait,
        wait_timeout=args.wait_limit,
    )
    return gpu_run(command, settings)


# ---- lock -------------------------------------------------------------------------------------


def _add_lock(sub) -> None:
    p = sub.add_parser("lock", help="workspace locks and work-directory owners")
    inner = p.add_subparsers(dest="lock_command", required=True, parser_class=ArgumentParser)
    session_help = "who holds it (default: $SWARMDECK_SESSION, else the holder's pid)"
    acquire = inner.add_parser("acquire", help="take the lock of PATH, queueing while it is held")
    acquire.add_argument("path", metavar="PATH")
    acquire.add_argument("--session", help=session_help)
    acquire.add_argument(
        "--pid",
        type=int,
        help="the process that holds it (default: the nearest caller that outlives this"
        " command, past per-command shells and wrappers)",
    )
    acquire.add_argument("--command", dest="what", help="what it is for (default: its command)")
    acquire.add_argument("--no-wait", action="store_true", help="refuse (exit 78) if held")
    acquire.add_argument("--timeout", type=float, metavar="S", help="stop queueing after S s")
    acquire.set_defaults(handler=_lock_acquire)
    release = inner.add_parser("release", help="give back the lock of PATH")
    release.add_argument("path", metavar="PATH")
    release.add_argument("--session", help=session_help)
    release.add_argument("--pid", type=int, help="the holder (default: as for acquire)")
    release.set_defaults(handler=_lock_release)
    show = inner.add_parser("show", help="who holds the lock of PATH (every lock without PATH)")
    show.add_argument("path", metavar="PATH", nargs="?")
    show.set_defaults(handler=_lock_show)
    claim = inner.add_parser("claim", help="create DIR under the work root, owned by a session")
    claim.add_argument("path", metavar="DIR")
    claim.add_argument("--session", help=session_help)
    claim.add_argument("--purpose", default="", help="what the directory is for")
    claim.set_defaults(handler=_lock_claim)
    cleanup = inner.add_parser(
        "cleanup", help="remove this session's directories no process uses; list the others"
    )
    cleanup.add_argument("--root", help="the work root (default: config locks.work_root)")
    cleanup.add_argument("--session", help=session_help)
    cleanup.set_defaults(handler=_lock_cleanup)


def _lock_holder(args: argparse.Namespace):
    import os

    from swarmdeck.probes.procs import identity, lasting_ancestor

    holder = identity(args.pid) if args.pid else lasting_ancestor(os.getpid())
    if holder is None:
        who = args.pid or "of the caller"
        raise UsageError(f"no process {who} to hold the lock; name one with --pid")
    return holder


def _caller_pid() -> int:
    """The process a default session is named after: the caller that outlives this command."""
    import os

    from swarmdeck.probes.procs import lasting_ancestor

    caller = lasting_ancestor(os.getpid())
    return caller.pid if caller else os.getppid()


def _session(args: argparse.Namespace, pid: int) -> str:
    import os

    return args.session or os.environ.get("SWARMDECK_SESSION") or f"pid-{pid}"


def _lock_acquire(args: argparse.Namespace) -> int:
    from pathlib import Path

    from swarmdeck.actions.lock import acquire

    holder = _lock_holder(args)
    what = args.what
    if what is None:
        try:
            raw = Path(f"/proc/{holder.pid}/cmdline").read_bytes()
        except OSError:
            raw = b""  # the holder's command is only a label; the lock works without it
        what = " ".join(part.decode(errors="replace") for part in raw.split(b"\0") if part)
    got = acquire(
        args.path,
        session=_session(args, holder.pid),
        command=what,
        holder=holder,
        wait=not args.no_wait,
        timeout=args.timeout,
    )
    verb = "already held" if got.already_held else "locked"
    print(f"{got.holder.path}: {verb} by session {got.holder.session}, process {holder.pid}")
    return ExitCode.OK


def _lock_release(args: argparse.Namespace) -> int:
    from pathlib import Path

    from swarmdeck.actions.lock import release

    holder = _lock_holder(args)
    before = release(args.path, session=_session(args, holder.pid))
    print(f"{Path(args.path).resolve()}: released (was {before.describe()})")
    return ExitCode.OK


def _lock_show(args: argparse.Namespace) -> int:
    from swarmdeck.probes.locks import all_locks, read_lock

    states = [read_lock(args.path)] if args.path else all_locks()
    for state in states:
        print(f"{state.path or args.path or state.lock_file}: {state.describe()}")
    if not states:
        print("no workspace locks")
    return ExitCode.OK


def _lock_claim(args: argparse.Namespace) -> int:

    from swarmdeck.actions.owners import claim_directory

    owner = claim_directory(args.path, session=_session(args, _caller_pid()), purpose=args.purpose)
    print(f"{args.path}: owned by session {owner.session}")
    return ExitCode.OK


def _lock_cleanup(args: argparse.Namespace) -> int:

    from swarmdeck.actions.owners import cleanup
    from swarmdeck.config import load_config

    root = args.root or load_config().locks.work_root
    if not root:
        raise UsageError("lock cleanup needs --root or locks.work_root in the config")
    report = cleanup(root, session=_session(args, _caller_pid()))
    for path in report.removed:
        print(f"removed {path}")
    for kept in report.kept:
        print(f"kept {kept.directory}: {kept.reason}")
    if report.unchecked:
        print(f"could not check processes {', '.join(map(str, report.unchecked))}")
    return ExitCode.OK


# ---- hook / hooks -----------------------------------------------------------------------------


def _add_hook(sub) -> None:
    p = sub.add_parser(
        "hook",
        help="answer a Claude Code hook (stdin JSON -> stdout JSON); always exits 0",
    )
    p.add_argument("event", nargs="?", default="", help="pre-tool-use, session-start, stop, …")
    p.set_defaults(handler=_hook)


def _hook(args: argparse.Namespace) -> int:
    from swarmdeck.hooks.entry import main as hook_main

    return hook_main([args.event])


def _add_hooks(sub) -> None:
    p = sub.add_parser("hooks", help="the Claude Code hook entries in settings.json")
    inner = p.add_subparsers(dest="hooks_command", required=True, parser_class=ArgumentParser)
    install = inner.add_parser(
        "install",
        help="merge swarmdeck's hook entries into settings.json (idempotent, with a backup)",
        usage="swarmdeck hooks install [--user | --project DIR] [--uninstall]",
    )
    where = install.add_mutually_exclusive_group()
    where.add_argument(
        "--user", action="store_true", help="$CLAUDE_CONFIG_DIR/settings.json (the default)"
    )
    where.add_argument("--project", metavar="DIR", help="DIR/.claude/settings.json")
    install.add_argument(
        "--uninstall", action="store_true", help="remove swarmdeck's entries, and only those"
    )
    install.set_defaults(handler=_hooks_install)


def _hooks_install(args: argparse.Namespace) -> int:
    from swarmdeck.actions.hooks_install import apply, settings_path

    path = settings_path(user=args.user, project=args.project)
    result = apply(path, uninstall=args.uninstall)
    if not result.changed:
        state = "not present" if args.uninstall else "already installed"
        print(f"swarmdeck hooks {state} in {path}; nothing changed")
        return ExitCode.OK
    print(result.diff, end="")
    saved = f" (previous file kept as {result.backup})" if result.backup else ""
    done = "removed from" if args.uninstall else "installed in"
    print(f"swarmdeck hooks {done} {path}{saved}")
    return ExitCode.OK


# ---- parser -----------------------------------------------------------------------------------

PARSERS: list[Callable[[object], None]] = [
    _add_ui,
    _add_status,
    _add_probe,
    _add_config,
    _add_run,
    _add_gpu_run,
    _add_lock,
    _add_hook,
    _add_hooks,
]


def command_of(add: Callable[[object], None]) -> str:
    """The subcommand an adder registers, by the rule every adder follows: `_add_gpu_run`
    adds `gpu-run`."""
    return add.__name__.removeprefix("_add_").replace("_", "-")


def build_parser(command: str | None = None) -> ArgumentParser:
    """The command line's parser; given the subcommand about to run, only that one is built.

    Every caged run starts here, and building every subcommand's parser costs it more the more
    subcommands there are. Anything else (no command, --help, --version, a mistyped command)
    gets the whole parser, so help and "invalid choice" still list every command.
    """
    parser = ArgumentParser(
        prog="swarmdeck",
        description="A terminal control room for machines that run swarms of coding agents.",
    )
    parser.add_argument("--version", action="version", version=f"swarmdeck {__version__}")
    sub = parser.add_subparsers(dest="command", parser_class=ArgumentParser, metavar="COMMAND")
    chosen = [add for add in PARSERS if command_of(add) == command]
    for add in chosen or PARSERS:
        add(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `swarmdeck` console script; returns the process exit status.

    As the console script (argv None), a command marked `ends_process` (`run`) ends the process
    once its output is flushed, like a hook: tearing down every imported module would add 20 to
    50 ms to each caged run, and nothing is left to clean up (the job's tree and cage are gone,
    its row is written, the store is closed).
    """
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list[:1] == ["hook"] and not {"-h", "--help"} & set(args_list):
        # Before every Bash call an agent makes: skip building the parser, import lazily.
        from swarmdeck.hooks.entry import main as hook_main

        return hook_main(args_list[1:])
    try:
        args = build_parser(args_list[0] if args_list else None).parse_args(args_list)
        handler: Handler = getattr(args, "handler", _ui)
        code = int(handler(args))
    except SwarmdeckError as error:
        print(f"swarmdeck: {error.message}", file=sys.stderr)
        return int(error.exit_code)
    except KeyboardInterrupt:
        return 130
    if argv is None and getattr(args, "ends_process", False):
        _end_process(code)
    return code


def _end_process(code: int) -> NoReturn:
    """Flush what was printed and end the process at once, skipping the interpreter's teardown."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            # A closed pipe or stream: its reader went away; the exit status still tells.
            continue
    os._exit(code)


if __name__ == "__main__":
    sys.exit(main())
