"""`swarmdeck doctor`, the first-run check: one screen saying what works here and what to do
about what does not, read from the real parts (a slice of the test's own, the test's Claude
Code folder, a peer at a closed port); exit 0 when jobs can be caged here, 78 with the reasons
otherwise."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

SWARMDECK = str(Path(sys.executable).parent / "swarmdeck")


def _doctor(env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([SWARMDECK, "doctor"], capture_output=True, text=True,
                          env={**os.environ, "COLUMNS": "200", **(env or {})}, timeout=120,
                          check=False)


def _line(output: str, name: str) -> str:
    """The doctor's line about `name` (the word after its mark)."""
    found = [line for line in output.splitlines() if line[2:].startswith(name)]
    assert found, output
    return found[0]


def test_a_usable_host_exits_0_and_says_each_part(own_slice: Path) -> None:
    done = _doctor()
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    cage = _line(out, "cage")
    assert cage.startswith("✓") and "cgroup v1" in cage and str(own_slice) in cage
    slice_line = _line(out, "slice")
    assert slice_line.startswith("✓") and "not claimed yet" in slice_line
    for name in ("PATH", "hooks", "Claude Code", "peers", "Slurm", "GPUs", "state"):
        _line(out, name)
    assert out.splitlines()[0].startswith("swarmdeck doctor: usable here")


def test_the_slice_line_names_its_owner_once_a_run_claimed_it(own_slice: Path) -> None:
    assert subprocess.run([SWARMDECK, "run", "--", "true"], capture_output=True,
                          timeout=60, check=False).returncode == 0
    slice_line = _line(_doctor().stdout, "slice")
    assert "belongs to this ledger" in slice_line
    assert os.environ["SWARMDECK_STATE_DIR"] in slice_line


def test_no_cage_exits_78_and_says_why_and_what_to_do(isolated_home: Path) -> None:
    (isolated_home / "config.toml").write_text('[memory]\nreserve = "100%"\n')
    done = _doctor()
    assert done.returncode == 78, done.stdout + done.stderr
    assert _line(done.stdout, "slice").startswith("✗")
    assert "memory.reserve" in _line(done.stdout, "slice")
    (reasons,) = done.stderr.strip().splitlines()
    assert reasons.startswith("swarmdeck: not usable here: ") and "memory.reserve" in reasons
    assert done.stdout.splitlines()[0].startswith("swarmdeck doctor: not usable here")


def test_the_settings_files_with_swarmdecks_hooks_are_named(own_slice: Path,
                                                            isolated_home: Path) -> None:
    before = _line(_doctor().stdout, "hooks")
    assert before.startswith("!") and "swarmdeck hooks install" in before
    subprocess.run([SWARMDECK, "hooks", "install"], capture_output=True, timeout=60, check=True)
    after = _line(_doctor().stdout, "hooks")
    assert after.startswith("✓") and str(isolated_home / "claude" / "settings.json") in after


def test_a_hook_whose_swarmdeck_is_gone_is_not_usable(own_slice: Path,
                                                      isolated_home: Path) -> None:
    settings = isolated_home / "claude" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(
        '{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command",'
        f' "command": "{isolated_home}/gone/swarmdeck hook pre-tool-use"}}]}}]}}}}'
    )
    done = _doctor()
    assert done.returncode == 78, done.stdout
    hooks = _line(done.stdout, "hooks")
    assert hooks.startswith("✗") and f"{isolated_home}/gone/swarmdeck" in hooks


def test_the_claude_code_folder_and_its_sessions_are_counted(own_slice: Path,
                                                             isolated_home: Path) -> None:
    missing = _line(_doctor().stdout, "Claude Code")
    assert missing.startswith("!") and str(isolated_home / "claude") in missing
    project = isolated_home / "claude" / "projects" / "-work-x"
    project.mkdir(parents=True)
    for name in ("a", "b"):
        (project / f"{name}.jsonl").write_text("{}\n")
    seen = _line(_doctor().stdout, "Claude Code")
    assert seen.startswith("✓") and "2 sessions" in seen


def test_a_peer_that_does_not_answer_is_named_with_why(own_slice: Path,
                                                        isolated_home: Path) -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    config = isolated_home / "config.toml"
    config.write_text(config.read_text() + (
        f'\n[[hosts]]\nname = "big2"\naddress = "127.0.0.1"\nport = {port}\n'
        f'known_hosts = "{isolated_home}/known_hosts"\ntimeout = 2\n'
    ))
    done = _doctor()
    assert done.returncode == 78, done.stdout + done.stderr
    peer = _line(done.stdout, "peer big2")
    assert peer.startswith("✗") and str(port) in peer
    assert "peer big2" in done.stderr


def test_a_private_state_folder_without_its_own_slice_is_told_before_it_claims(
    isolated_home: Path
) -> None:
    """SWARMDECK_STATE_DIR set (as every test sets it) and no `[memory] slice`: the doctor says
    that the first run would make this ledger the owner of the machine's slice."""
    done = _doctor()
    slice_line = _line(done.stdout, "slice")
    if _line(done.stdout, "cage").startswith("✓"):
        assert slice_line.startswith("!") and "SWARMDECK_STATE_DIR" in slice_line
