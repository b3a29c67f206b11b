"""`swarmdeck run`'s command line: argparse reads it, with the project's one-line errors.

Options come first, then the command, with or without "--" before it; words after the command
are the command's own, options of ours among them included.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from swarmdeck.cli.command_line import build_parser

SWARMDECK = str(Path(sys.executable).with_name("swarmdeck"))


def reading(*words: str) -> dict[str, object]:
    """What `swarmdeck run WORDS` is read as, less the handler."""
    args = build_parser("run").parse_args(["run", *words])
    return {name: value for name, value in vars(args).items() if name != "handler"}


@pytest.mark.parametrize(
    ("words", "command", "options"),
    [
        (["--", "true"], ["--", "true"], {}),
        (["true"], ["true"], {}),
        (["--cap", "8G", "--wait", "300", "--", "true"], ["--", "true"],
         {"cap": "8G", "wait": 300.0}),
        (["--cap=8G", "--label", "tests", "--threads", "16", "--", "pytest", "-n", "16"],
         ["--", "pytest", "-n", "16"], {"cap": "8G", "label": "tests", "threads": 16}),
        (["--unbounded", "--detach", "--timeout", "1800", "--", "make", "-j8"],
         ["--", "make", "-j8"], {"unbounded": True, "detach": True, "timeout": 1800.0}),
        (["--on", "slurm", "--", "python", "train.py"], ["--", "python", "train.py"],
         {"on": "slurm"}),
        (["--cap", "4G", "make", "-j", "--cap", "8G"], ["make", "-j", "--cap", "8G"],
         {"cap": "4G"}),
        (["--single", "--needs-gpu", "--force", "--", "make"], ["--", "make"],
         {"single": True, "needs_gpu": True, "force": True}),
        (["--inputs", "src", "tests", "--", "make"], ["--", "make"],
         {"inputs": ["src", "tests"]}),
        (["--lab", "x", "--", "true"], ["--", "true"], {"label": "x"}),
        (["--", "--", "x"], ["--", "--", "x"], {}),
        ([], [], {}),
    ],
)
def test_run_lines_read_options_then_the_command(
    words: list[str], command: list[str], options: dict[str, object]
) -> None:
    defaults = {
        "cap": None, "label": None, "threads": None, "unbounded": False, "wait": None,
        "timeout": None, "detach": False, "on": None, "inputs": None, "needs": None,
        "force": False, "single": False, "needs_gpu": False,
    }
    expected = {**defaults, **options, "command": command, "ends_process": True}
    assert reading(*words) == {"command": "run", **expected}


HEAVY_FOR_A_RUN = ("subprocess", "asyncio", "decimal", "fractions", "psutil", "textual", "rich",
                   "asyncssh")
"""Modules a caged run's start would pay milliseconds for and has no use for (threading is the
run path's own since its locks stopped coming from CPython's private _thread)."""


def test_the_run_path_imports_none_of_the_heavy_modules() -> None:
    probe = (
        "import sys; import swarmdeck.cli, swarmdeck.cli.command_line, swarmdeck.cli.run,"
        " swarmdeck.actions.runner, swarmdeck.actions.cage.v1, swarmdeck.actions.spawn,"
        " swarmdeck.config_cache, swarmdeck.config;"
        " print(' '.join(m for m in sys.argv[1:] if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, *HEAVY_FOR_A_RUN], capture_output=True, text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [], done.stdout


def test_run_help_and_errors_are_argparse_s() -> None:
    shown = subprocess.run([SWARMDECK, "run", "--help"], capture_output=True, text=True,
                           timeout=60)
    assert shown.returncode == 0
    assert shown.stdout.startswith("usage: swarmdeck run [--cap SIZE]")
    wrong = subprocess.run([SWARMDECK, "run", "--threads", "many", "--", "true"],
                           capture_output=True, text=True, timeout=60)
    assert wrong.returncode == 251
    # Not argparse's "invalid int value": the words of the range check, as for --threads 0.
    assert wrong.stderr == "swarmdeck: --threads many: give a number from 1 to 65536\n"
    mistyped = subprocess.run([SWARMDECK, "run", "--on", "mpi", "--", "true"],
                              capture_output=True, text=True, timeout=60)
    assert mistyped.returncode == 251
    assert mistyped.stderr.startswith("swarmdeck: argument --on: invalid choice: 'mpi'")


def test_the_collector_is_on_again_once_the_run_has_started(isolated_home: Path) -> None:
    import gc

    from swarmdeck.cli import main

    assert main(["run", "--inputs", "src", "--detach", "--", "true"]) == 251
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0, "a caller that goes on keeps its objects collectable"


REPORTING_RUN = """
import gc, sys

sys.argv = ["swarmdeck", "run", "--inputs", "src", "--detach", "--", "true"]
from swarmdeck.cli import main

code = main()
print(gc.get_freeze_count(), gc.isenabled())
sys.exit(code)
"""
"""The console script's call (no argv given), refused after start-up, its collector reported."""


def test_a_run_that_is_the_whole_process_freezes_what_its_start_up_made(
    isolated_home: Path,
) -> None:
    ended = subprocess.run([sys.executable, "-c", REPORTING_RUN], capture_output=True,
                           text=True, timeout=60)
    assert ended.returncode == 251, ended.stderr
    frozen, enabled = ended.stdout.split()
    assert int(frozen) > 1000 and enabled == "True"
