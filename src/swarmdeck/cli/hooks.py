"""`swarmdeck hook EVENT` and `swarmdeck hooks install`: Claude Code's side of swarmdeck."""

from __future__ import annotations

import argparse

from swarmdeck.cli.common import add_subcommands, example, flag_type, given_path
from swarmdeck.exitcodes import ExitCode


def _add_hook(sub) -> None:
    from swarmdeck.hooks.payload import EVENTS

    width = max(len(name) for name in EVENTS)
    p = sub.add_parser(
        "hook",
        help="answer a Claude Code hook (stdin JSON -> stdout JSON); always exits 0",
        **example(
            "echo '{\"hook_event_name\": \"PreToolUse\", \"tool_name\": \"Bash\",",
            "      \"tool_input\": {\"command\": \"pytest -q\"}}' | swarmdeck hook pre-tool-use",
            before="events (any other Claude Code event is recorded too):\n"
            + "\n".join(f"  {name:<{width}}  {claude}" for name, claude in EVENTS.items()),
            after="Claude Code runs it from the entries 'swarmdeck hooks install' writes.",
        ),
    )
    p.add_argument("event", nargs="?", default="", help="the event, as listed below")
    p.set_defaults(handler=_hook)


def _hook(args: argparse.Namespace) -> int:
    from swarmdeck.hooks.entry import main as hook_main

    return hook_main([args.event])


def _add_hooks(sub) -> None:
    p = sub.add_parser(
        "hooks",
        help="the Claude Code hook entries in settings.json",
        **example(
            "swarmdeck hooks install              # $CLAUDE_CONFIG_DIR/settings.json or ~/.claude",
            "swarmdeck hooks install --project .  # ./.claude/settings.json",
            "swarmdeck hooks install --uninstall",
        ),
    )
    inner = add_subcommands(p, "hooks_command")
    install = inner.add_parser(
        "install",
        help="merge swarmdeck's hook entries into settings.json (idempotent, with a backup)",
        usage="swarmdeck hooks install [--user | --project DIR] [--uninstall | --strict]",
        **example("swarmdeck hooks install --project ."),
    )
    install.add_argument(
        "--user", action="store_true", help="$CLAUDE_CONFIG_DIR/settings.json (the default)"
    )
    install.add_argument(
        "--project", type=flag_type(given_path), metavar="DIR", help="DIR/.claude/settings.json"
    )
    install.add_argument(
        "--uninstall", action="store_true", help="remove swarmdeck's entries, and only those"
    )
    install.add_argument(
        "--strict", action="store_true",
        help='also write [guards] preset = "strict" into the config: every guard denies',
    )
    install.set_defaults(handler=_hooks_install)


def _hooks_install(args: argparse.Namespace) -> int:
    from swarmdeck.actions.hooks_install import apply, settings_path
    from swarmdeck.errors import UsageError

    if args.user and args.project is not None:
        raise UsageError("--user and --project name two settings files: give one of them")
    if args.strict and args.uninstall:
        raise UsageError("--strict sets the guards' preset on install; leave it out with"
                         " --uninstall")
    if args.strict and args.project is not None:
        # The preset lives in the user's config, so it would hold for every project.
        raise UsageError("--strict writes the user config, for every project: leave out"
                         " --project, or set [guards] preset in a config SWARMDECK_CONFIG names")
    path = settings_path(user=args.user, project=args.project)
    result = apply(path, uninstall=args.uninstall)
    if args.strict:
        from swarmdeck.actions.guard_preset import set_strict
        from swarmdeck.paths import config_path

        config = config_path()
        if set_strict(config):
            print(f'guards: preset = "strict" written to {config}: every guard denies'
                  " (`swarmdeck guards` lists them)")
        else:
            print(f'guards: preset = "strict" already set in {config}')
    if not result.changed:
        state = "not present" if args.uninstall else "already installed"
        print(f"swarmdeck hooks {state} in {path}; nothing changed")
        return ExitCode.OK
    print(result.diff, end="")
    saved = f" (previous file kept as {result.backup})" if result.backup else ""
    done = "removed from" if args.uninstall else "installed in"
    print(f"swarmdeck hooks {done} {path}{saved}")
    return ExitCode.OK


ADDERS = {
    "hook": _add_hook,
    "hooks": _add_hooks,
}
"""The subcommands this module adds, by name."""
