"""`swarmdeck serve`: the control room in a browser, behind a token, read-only by default."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from swarmdeck.cli.common import example, exit_codes
from swarmdeck.exitcodes import ExitCode

LOOPBACK = "127.0.0.1"
"""Where serve listens unless --bind says otherwise: reach it through `ssh -L`."""


def _add_serve(sub) -> None:
    p = sub.add_parser(
        "serve",
        help="the control room in a browser (token-protected, read-only unless asked)",
        **example(
            "swarmdeck serve                  # prints the URL to open; watch only",
            "swarmdeck serve --allow-actions  # the browser may approve, kill, launch",
            "ssh -L 8765:127.0.0.1:8765 workstation   # then open the printed URL here",
            after=exit_codes("0 once stopped (Ctrl+C, SIGTERM)", (ExitCode.USAGE,),
                             {ExitCode.USAGE: "usage (port taken, bad token file, no "
                              "textual-serve installed)"}),
        ),
    )
    p.add_argument("--port", type=_port, default=8765, metavar="N",
                   help="the port to listen on (default 8765; 0 picks a free one)")
    p.add_argument("--bind", default=LOOPBACK, metavar="ADDR",
                   help=f"the address to listen on (default {LOOPBACK}; others warn)")
    p.add_argument("--allow-actions", action="store_true",
                   help="let the browser act (approve, kill, launch, migrate); default: watch")
    p.add_argument("--token-file", type=Path, metavar="F",
                   help="keep the token in F: read when F exists, else made and written there")
    p.set_defaults(handler=_serve)


def _port(text: str) -> int:
    if not text.isdigit() or int(text) > 65535:
        raise argparse.ArgumentTypeError(f"not a port number (0-65535): {text!r}")
    return int(text)


def _serve(args: argparse.Namespace) -> int:
    import asyncio

    from swarmdeck.errors import UsageError

    try:
        from swarmdeck.serve.web import Listening, serve_until_stopped, web_app
    except ImportError:
        raise UsageError(
            "swarmdeck serve needs textual-serve: pip install 'swarmdeck[serve]'"
        ) from None
    from swarmdeck.cli.common import context
    from swarmdeck.paths import private_state_dir
    from swarmdeck.serve.access import serving_token
    from swarmdeck.serve.shared_snapshot import ProbeWriter, shared_folder

    config, store = context()
    state = Path(private_state_dir())
    token, token_path = serving_token(args.token_file, state)
    if args.bind != LOOPBACK:
        print(f"swarmdeck serve: warning: listening on {args.bind}, not {LOOPBACK}: anyone who"
              " reaches it and holds the token can watch"
              + (" and act" if args.allow_actions else "")
              + "; prefer the default and ssh -L", file=sys.stderr, flush=True)
    folder = shared_folder(state)
    writer = ProbeWriter(config, store, folder)
    command = [sys.executable, "-m", "swarmdeck.app.served", str(folder)]
    if not args.allow_actions:
        command.append("--readonly")

    def ready(where: Listening) -> None:
        mode = "actions allowed" if args.allow_actions else "read-only"
        print(f"swarmdeck serve: {mode}; open {where.url(token)}\n"
              f"(the token is kept in {token_path}; Ctrl+C stops)", flush=True)

    try:
        writer.start()
        asyncio.run(serve_until_stopped(web_app(shlex.join(command), token), args.bind,
                                        args.port, ready))
    finally:
        writer.stop()
        for leftover in folder.iterdir():
            leftover.unlink()
        folder.rmdir()
    return 0


ADDERS = {"serve": _add_serve}
"""The subcommands this module adds, by name."""
