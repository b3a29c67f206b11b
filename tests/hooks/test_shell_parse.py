"""The shell parser's limits: scripts read safely, once, not too deep; strings parsed again."""

from __future__ import annotations

import os
from pathlib import Path

from swarmdeck.hooks.shell_parse import SCRIPT_DEPTH, SCRIPT_LIMIT, parse, simple_commands


def _programs(command: str, cwd: Path) -> list[str]:
    return [argv[0] for argv in simple_commands(command, str(cwd))]


def test_a_script_that_runs_itself_is_read_once(tmp_path: Path) -> None:
    (tmp_path / "loop.sh").write_text("make test\nbash loop.sh\n")
    facts = parse("bash loop.sh", str(tmp_path))
    assert facts.scripts == [str((tmp_path / "loop.sh").resolve())]
    assert [c.argv for c in facts.commands].count(["make", "test"]) == 1


def test_scripts_are_read_four_levels_deep_and_no_deeper(tmp_path: Path) -> None:
    for level in range(1, SCRIPT_DEPTH + 2):
        (tmp_path / f"s{level}.sh").write_text(f"echo level{level}\nbash s{level + 1}.sh\n")
    facts = parse("bash s1.sh", str(tmp_path))
    echoed = [c.argv[1] for c in facts.commands if c.program == "echo"]
    assert echoed == [f"level{n}" for n in range(1, SCRIPT_DEPTH + 1)]


def test_a_fifo_in_command_position_never_hangs_and_a_large_script_is_not_read(
    tmp_path: Path,
) -> None:
    os.mkfifo(tmp_path / "pipe.sh")
    (tmp_path / "big.sh").write_text("pytest\n" + "#" * SCRIPT_LIMIT)
    facts = parse("bash pipe.sh; bash big.sh", str(tmp_path))
    assert [c.program for c in facts.commands] == ["bash", "bash"]
    assert any("not a regular file" in why for why in facts.unread)
    assert any("over 256 KiB" in why for why in facts.unread)


def test_a_binary_or_python_script_is_not_read_as_shell(tmp_path: Path) -> None:
    (tmp_path / "tool").write_bytes(b"\x7fELF\0\0pytest")
    (tmp_path / "job.py").write_text("#!/usr/bin/env python3\nimport os\nos.system('pytest')\n")
    for name in ("tool", "job.py"):
        (tmp_path / name).chmod(0o755)
    assert _programs("./tool; ./job.py", tmp_path) == ["./tool", "./job.py"]


def test_cd_is_followed_for_the_scripts_after_it(tmp_path: Path) -> None:
    (tmp_path / "ci").mkdir()
    (tmp_path / "ci" / "run.sh").write_text("cargo test\n")
    assert _programs("cd ci && ./run.sh", tmp_path) == ["cd", "./run.sh", "cargo"]


def test_strings_and_here_documents_are_parsed_again(tmp_path: Path) -> None:
    command = "bash -lc \"sh -c 'pytest -q'\"; bash <<'EOF'\nmake check\nEOF\n"
    commands = simple_commands(command, str(tmp_path))
    assert ["pytest", "-q"] in commands and ["make", "check"] in commands


def test_what_only_looks_or_reads_runs_nothing(tmp_path: Path) -> None:
    assert simple_commands("command -v pytest", str(tmp_path)) == []
    (tmp_path / "x.sh").write_text("cargo build\n")
    assert _programs("bash -n x.sh", tmp_path) == ["bash"]


def test_wrappers_and_runners_are_seen_through(tmp_path: Path) -> None:
    command = (
        "env -u X A=1 sudo -u ci nice -n 5 ionice -c3 timeout -s KILL 5m stdbuf -oL setsid "
        "taskset -c 0-3 time -p uv run --with x poetry run npx jest --ci"
    )
    [only] = parse(command, str(tmp_path)).commands
    assert only.argv == ["jest", "--ci"] and only.timeout
    assert "A=1" in only.assignments


def test_a_command_in_the_cage_is_marked_caged(tmp_path: Path) -> None:
    [inner] = parse("swarmdeck run --label t -- bash -c 'pytest'", str(tmp_path)).commands[1:]
    assert inner.argv == ["pytest"] and inner.caged
