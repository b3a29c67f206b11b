"""Output that cannot be written (a full disk, a closed stdout) ends a printing command with
one line on stderr, where stderr can be written, and exit 251, never a traceback; a caged run
with no stderr says nothing and still exits with its command's own status."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from swarmdeck.cli.output import UNWRITABLE_EXIT
from swarmdeck.exitcodes import ExitCode

SWARMDECK = str(Path(sys.executable).with_name("swarmdeck"))

PRINTING = [
    ["status"],
    ["status", "--json"],
    ["config", "show"],
    ["alerts"],
    ["kills"],
    ["lock", "show"],
    ["watch", "--once"],
    ["--help"],
    ["--version"],
]


def swarmdeck_redirected(redirections: str, *argv: str) -> subprocess.CompletedProcess[str]:
    """`swarmdeck ARGV` run by a shell with `redirections` applied (`>/dev/full`, `>&-`);
    stderr is captured unless the redirections say otherwise."""
    return subprocess.run(
        ["sh", "-c", f'exec "$@" {redirections}', "sh", SWARMDECK, *argv],
        capture_output=True, text=True, timeout=60,
    )


@pytest.mark.parametrize("argv", PRINTING, ids=" ".join)
def test_output_to_a_full_disk_is_one_line_and_exit_251(argv: list[str]) -> None:
    done = swarmdeck_redirected(">/dev/full", *argv)
    assert (done.returncode, done.stderr) == (
        UNWRITABLE_EXIT, "swarmdeck: cannot write the output: No space left on device\n"
    )


@pytest.mark.parametrize("argv", PRINTING, ids=" ".join)
def test_a_closed_stdout_is_one_line_and_exit_251(argv: list[str]) -> None:
    done = swarmdeck_redirected(">&-", *argv)
    assert (done.returncode, done.stderr) == (
        UNWRITABLE_EXIT, "swarmdeck: cannot write the output: stdout is closed\n"
    )


def test_output_that_fails_with_an_unwritable_stderr_too_is_exit_251_and_silent() -> None:
    done = swarmdeck_redirected(">/dev/full 2>/dev/full", "status")
    assert done.returncode == UNWRITABLE_EXIT


@pytest.mark.parametrize("stderr", ["2>&-", "2>/dev/full"])
def test_a_run_with_no_stderr_exits_with_its_command_status(stderr: str, own_slice: Path) -> None:
    done = swarmdeck_redirected(stderr, "run", "--", "sh", "-c", "echo ran; exit 3")
    assert (done.returncode, done.stdout) == (3, "ran\n")


@pytest.mark.parametrize("stderr", ["2>&-", "2>/dev/full"])
def test_a_refused_run_with_no_stderr_still_exits_with_the_refusal(stderr: str) -> None:
    done = swarmdeck_redirected(stderr, "run", "--cap", "lots", "--", "true")
    assert (done.returncode, done.stdout) == (ExitCode.USAGE, "")


def test_a_run_with_a_closed_stdout_exits_with_its_command_status(own_slice: Path) -> None:
    done = swarmdeck_redirected(">&-", "run", "--", "sh", "-c", "exit 4")
    assert (done.returncode, done.stderr) == (4, "")
