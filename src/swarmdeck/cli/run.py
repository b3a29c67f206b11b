"""`swarmdeck run` (a command in a memory cage after admission) and `swarmdeck gpu-run`.

Both are read by argparse (through cli.common's ArgumentParser, which turns its errors into one
line and exit 251); what a run costs to start is in bench/results/runner.md.
"""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING

from swarmdeck.actions.run_request import script_inputs
from swarmdeck.cli.common import context, example, exit_codes, flag_type, thread_count
from swarmdeck.durations import seconds_above_zero, seconds_or_zero

if TYPE_CHECKING:
    from swarmdeck.actions.run_request import RunRequest
    from swarmdeck.config import Config
    from swarmdeck.state import StateStore


def _add_run(sub) -> None:
    from swarmdeck.exitcodes import RUN_CODES

    p = sub.add_parser(
        "run",
        help="run a command in a memory cage after booking its memory",
        usage="swarmdeck run [--cap SIZE] [--label L] [--threads N] [--unbounded] [--wait S] "
        "[--timeout S] [--detach] [--on slurm] [--inputs PATH... [--force]] [--needs CMD...] "
        "[--single] [--needs-gpu] -- CMD...",
        **example(
            "swarmdeck run --cap 8G --label tests --threads 16 -- pytest -n 16",
            "swarmdeck run --cap 4G --timeout 1800 --detach -- make -j8 check",
            after=exit_codes("the command's own", RUN_CODES) + "\n\n"
            "The job finds in $SWARMDECK_SERIAL_FILE a file of its own (in the state folder,\n"
            "recorded in its ledger row): while it is serial on purpose (linking, one last test)\n"
            "it may write 'serial right now: REASON' into it, and remove it or write anything\n"
            "else when the phase ends. The Jobs panel shows the reason beside the job's cores\n"
            "figures, so a low thread count is read as intended, not as waste.\n\n"
            "--inputs (or a script's '# swarmdeck: inputs src/ tests/' line) makes a rerun with\n"
            "nothing changed exit 78 at once: the files (git's view where tracked), the command,\n"
            "its folder and each $NAME given are compared with the last run's; unchanged since\n"
            "a run that ended ok, nothing runs. --needs, --single and --needs-gpu exit 78 when\n"
            "unmet, naming what is missing.",
        ),
    )
    p.add_argument("--cap", metavar="SIZE", help="hard memory cap (512M, 8G, 70%%)")
    p.add_argument("--label", metavar="L", help="name shown in the Jobs panel")
    p.add_argument("--threads", type=thread_count, metavar="N",
                   help="threads the job will use (default: this host's heavy threads)")
    p.add_argument(
        "--unbounded",
        action="store_true",
        help="may grow to the whole slice; killed first; books at most the slice",
    )
    p.add_argument(
        "--wait", type=flag_type(seconds_or_zero), metavar="S", help="seconds to queue for room"
    )
    p.add_argument(
        "--timeout",
        type=flag_type(seconds_above_zero),
        metavar="S",
        help="stop the job after S seconds",
    )
    p.add_argument(
        "--detach", action="store_true", help="keep running after this terminal goes away"
    )
    p.add_argument(
        "--on",
        choices=["slurm"],
        help="submit to the Slurm cluster of [slurm] (sbatch --mem from its learned peak)",
    )
    p.add_argument(
        "--inputs", nargs="+", metavar="PATH",
        help="skip (exit 78) when these files, $VARIABLES and the command are unchanged since"
        " its last run that ended ok",
    )
    p.add_argument("--force", action="store_true", help="run even when --inputs are unchanged")
    p.add_argument(
        "--needs", nargs="+", metavar="CMD", help="refuse (exit 78) unless these are on PATH"
    )
    p.add_argument(
        "--single", action="store_true",
        help="refuse (exit 78) while another run of the same label is live",
    )
    p.add_argument(
        "--needs-gpu", action="store_true", help="refuse (exit 78) unless a GPU can be read here"
    )
    p.add_argument("command", nargs=argparse.REMAINDER, help="the command, after --")
    p.set_defaults(handler=_run, ends_process=True)


def _run(args: argparse.Namespace) -> int:
    import gc

    # Importing the runner's modules and opening the config and the store make objects that
    # live as long as the process: the cyclic collector's passes over them find nothing and
    # are a measurable share of each caged run. It is off for that start-up only: the runner
    # that then waits for the job, for hours maybe, collects as usual. When the run is the
    # whole process (the console script), what start-up made is frozen first, so the
    # collector's first pass after it walks only what came later, not every object of start-up;
    # a caller that goes on after the run keeps its objects collectable.
    gc.disable()
    try:
        from swarmdeck.actions.runner import RunRequest, run_job

        config, store = context()
    finally:
        if getattr(args, "whole_process", False):
            gc.freeze()
        gc.enable()
    command = list(args.command)
    if command[:1] == ["--"]:
        command = command[1:]
    request = RunRequest(
        argv=command,
        cwd=_working_folder(),
        cap=args.cap,
        label=args.label,
        threads=args.threads,
        unbounded=args.unbounded,
        wait=args.wait,
        timeout=args.timeout,
        detach=args.detach,
    )
    # The store is not closed: the runner's process ends right after (`main` skips the
    # interpreter's teardown), every write is committed, and closing the last connection would
    # checkpoint the WAL into the main file, changing it, so the next runner would have to
    # verify the whole file again (a cost that grows with its size) instead of once per change.
    conditions = args.inputs or args.needs or args.single or args.needs_gpu
    if args.on == "slurm":
        if conditions:
            from swarmdeck.errors import UsageError

            raise UsageError(
                "--inputs, --needs, --single and --needs-gpu are checked on this host: they do"
                " not go with --on slurm; drop them or run it here"
            )
        from swarmdeck.actions.slurm_run import run_on_slurm

        return run_on_slurm(config, store, request)
    inputs = tuple(args.inputs or ()) or script_inputs(command, request.cwd)
    if not (inputs or conditions):
        return run_job(config, store, request)
    return _run_with_conditions(config, store, request, args, inputs)


def _run_with_conditions(
    config: Config, store: StateStore, request: RunRequest, args: argparse.Namespace,
    inputs: tuple[str, ...],
) -> int:
    """A run that asked for conditions or named inputs: refused (78) before anything is booked
    when one is unmet or nothing changed; its inputs remembered once it ended."""
    from swarmdeck.actions import preflight
    from swarmdeck.actions.runner import job_label, run_job

    if request.detach and inputs:
        from swarmdeck.errors import UsageError

        raise UsageError("--inputs and --detach: a skipped rerun needs the run's end; drop one")
    conditions = preflight.Conditions(
        inputs=inputs, force=args.force, needs=tuple(args.needs or ()), single=args.single,
        needs_gpu=args.needs_gpu,
    )
    fingerprint = preflight.check(store, conditions, request.argv, request.cwd,
                                  job_label(request))
    code = run_job(config, store, request)
    if fingerprint is not None:
        preflight.record(store, fingerprint)
    return code


def _working_folder() -> str:
    """The folder the job starts in: this one, which must still exist."""
    from swarmdeck.errors import UsageError

    try:
        return os.getcwd()
    except FileNotFoundError:
        raise UsageError(
            "the current folder no longer exists: change to one that does and run again"
        ) from None


# ---- gpu-run ----------------------------------------------------------------------------------


def _add_gpu_run(sub) -> None:
    p = sub.add_parser(
        "gpu-run",
        help="free the GPUs (stop allowlisted services), then run a command",
        usage="swarmdeck gpu-run [--wait] [--wait-limit S] -- CMD...",
        **example(
            "swarmdeck gpu-run -- python train.py",
            "swarmdeck gpu-run --wait --wait-limit 900 -- python eval.py",
        ),
    )
    p.add_argument(
        "--wait",
        action="store_true",
        help="wait while a process not on the allowlist holds a GPU (default: refuse, exit 78)",
    )
    p.add_argument(
        "--wait-limit",
        type=flag_type(seconds_or_zero),
        metavar="S",
        help="give up waiting after S seconds",
    )
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


ADDERS = {
    "run": _add_run,
    "gpu-run": _add_gpu_run,
}
"""The subcommands this module adds, by name."""
