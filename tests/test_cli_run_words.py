"""`swarmdeck run`'s words read without argparse: the same answer argparse gives, or none.

The quick reader takes only lines of the plain shape; for any other line it answers None and
argparse reads it, so help, usage errors and their exit codes stay argparse's own.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from swarmdeck.cli import build_parser
from swarmdeck.cli.run import plain_run_words
from swarmdeck.errors import UsageError

SWARMDECK = str(Path(sys.executable).with_name("swarmdeck"))
WORDS = [
    "--cap", "8G", "--cap=8G", "--cap=", "--label", "tests", "", "--threads", "4", "+4", "x4",
    " 4 ", "--wait", "1.5", "nan", "-1", "--timeout", "--unbounded", "--detach", "--on", "slurm",
    "mpi", "--on=slurm", "--", "true", "make", "-j", "-h", "--help", "--lab", "-x", "-",
    "--detach=1", "--cap=8G=9",
]


def argparse_reading(words: list[str]) -> dict[str, object] | None:
    """What argparse makes of `swarmdeck run WORDS`; None when it refuses them."""
    try:
        args, extra = build_parser("run").parse_known_args(["run", *words])
    except (UsageError, SystemExit):
        return None
    return None if extra else vars(args)


def test_plain_lines_read_as_argparse_reads_them() -> None:
    for words in (
        ["--", "true"],
        ["true"],
        ["--cap", "8G", "--wait", "300", "--", "true"],
        ["--cap=8G", "--label", "tests", "--threads", "16", "--", "pytest", "-n", "16"],
        ["--unbounded", "--detach", "--timeout", "1800", "--", "make", "-j8", "check"],
        ["--on", "slurm", "--", "python", "train.py"],
        ["--cap", "4G", "make", "-j", "--cap", "8G"],
        ["--", "--", "x"],
        [],
    ):
        quick = plain_run_words(words)
        assert quick is not None, words
        assert vars(quick) == argparse_reading(words)


def test_help_abbreviations_and_mistakes_are_left_to_argparse() -> None:
    for words in (
        ["--help"],
        ["-h", "--", "true"],
        ["--lab", "x", "--", "true"],
        ["--threads", "many", "--", "true"],
        ["--on", "mpi", "--", "true"],
        ["--cap"],
        ["--label", "-x", "--", "true"],
        ["--timeout", "-1", "--", "true"],
        ["--detach=1", "--", "true"],
        ["-", "true"],
    ):
        assert plain_run_words(words) is None, words


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(WORDS), max_size=8))
def test_any_line_reads_as_argparse_reads_it_or_is_left_to_it(words: list[str]) -> None:
    quick = plain_run_words(words)
    if quick is not None:
        # repr, so that a float("nan") both readings give (`--wait nan`) reads as the same.
        reading = argparse_reading(words)
        assert reading is not None, words
        assert repr(sorted(vars(quick).items())) == repr(sorted(reading.items()))


def test_a_plain_run_imports_no_argparse(isolated_home: Path) -> None:
    # Refused after the config and the store are opened, before any cage is made.
    probe = (
        "import sys; from swarmdeck.cli import main; "
        "print(main(['run', '--threads', '0', '--', 'true']), "
        "'argparse' in sys.modules, 'gettext' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=dict(os.environ),
        timeout=60,
    )
    assert done.stdout.split() == ["251", "False", "False"], done.stderr


HEAVY_FOR_A_RUN = ("argparse", "typing", "threading", "dataclasses", "subprocess", "asyncio",
                   "decimal", "fractions", "psutil", "textual", "rich")
"""Modules a caged run's start would pay milliseconds for and has no use for."""


def test_the_run_path_imports_none_of_the_heavy_modules() -> None:
    probe = (
        "import sys; import swarmdeck.cli, swarmdeck.cli.run, swarmdeck.actions.runner,"
        " swarmdeck.actions.cage.v1, swarmdeck.actions.spawn, swarmdeck.config_cache,"
        " swarmdeck.config; print(' '.join(m for m in sys.argv[1:] if m in sys.modules))"
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

    assert main(["run", "--threads", "0", "--", "true"]) == 251
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0, "a caller that goes on keeps its objects collectable"


REPORTING_RUN = """
import gc, sys

sys.argv = ["swarmdeck", "run", "--threads", "0", "--", "true"]
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
