"""One slice, one ledger: the first ledger to cap a slice owns it, another is refused in one
line naming both, and only the owner's config changes the cap."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from cagekit import SWARMDECK, hog, mem_total, write_config

from swarmdeck.probes.slice_owner import read_owner
from swarmdeck.sizes import format_size

MIB = 1 << 20


def _run(home: Path, state: str, config: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, SWARMDECK_STATE_DIR=str(home / state), SWARMDECK_CONFIG=str(config))
    return subprocess.run([SWARMDECK, "run", "--cap", "10M", "--", "true"], capture_output=True,
                          text=True, env=env, timeout=60, check=False)


def _limit(slice_path: Path) -> int:
    return int((slice_path / "memory.limit_in_bytes").read_text())


def test_a_runner_of_another_ledger_is_refused_and_the_cap_kept(
    isolated_home: Path, v1_slice: Path
) -> None:
    first = write_config(isolated_home / "a.toml", v1_slice, 100 * MIB)
    second = write_config(isolated_home / "b.toml", v1_slice, 60 * MIB)
    assert _run(isolated_home, "state-a", first).returncode == 0
    owner = read_owner(v1_slice)
    assert owner is not None and owner.ledger == str(isolated_home / "state-a" / "state.db")
    assert owner.config == str(first) and owner.cap == 100 * MIB
    refused = _run(isolated_home, "state-b", second)
    assert refused.returncode == 251
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1
    assert str(isolated_home / "state-a") in lines[0] and str(isolated_home / "state-b") in lines[0]
    assert _limit(v1_slice) == 100 * MIB


def test_the_owners_config_changes_the_cap_and_says_who_set_it(
    isolated_home: Path, v1_slice: Path
) -> None:
    config = write_config(isolated_home / "a.toml", v1_slice, 100 * MIB)
    assert _run(isolated_home, "state", config).returncode == 0
    write_config(config, v1_slice, 80 * MIB)
    assert _run(isolated_home, "state", config).returncode == 0
    assert _limit(v1_slice) == 80 * MIB
    owner = read_owner(v1_slice)
    assert owner is not None and owner.cap == 80 * MIB and owner.config == str(config)


def test_a_slice_whose_ledger_is_gone_is_taken_over(isolated_home: Path, v1_slice: Path) -> None:
    first = write_config(isolated_home / "a.toml", v1_slice, 100 * MIB)
    assert _run(isolated_home, "state-a", first).returncode == 0
    for name in ("state.db", "state.db-wal", "state.db-shm"):
        (isolated_home / "state-a" / name).unlink(missing_ok=True)
    second = write_config(isolated_home / "b.toml", v1_slice, 60 * MIB)
    assert _run(isolated_home, "state-b", second).returncode == 0
    owner = read_owner(v1_slice)
    assert owner is not None and owner.ledger.startswith(str(isolated_home / "state-b"))


def test_status_says_who_set_the_cap(isolated_home: Path, v1_slice: Path) -> None:
    config = write_config(isolated_home / "a.toml", v1_slice, 100 * MIB)
    assert _run(isolated_home, "state", config).returncode == 0
    env = dict(os.environ, SWARMDECK_STATE_DIR=str(isolated_home / "state"),
               SWARMDECK_CONFIG=str(config), COLUMNS="300")
    done = subprocess.run([SWARMDECK, "status"], capture_output=True, text=True, env=env,
                          timeout=60, check=True)
    line = next(line for line in done.stdout.splitlines() if line.startswith("slice cap"))
    assert "100M" in line and str(isolated_home / "state" / "state.db") in line
    assert str(config) in line


def _hold_record_lock(slice_path: Path) -> int:
    """Take the owner record's lock as another runner in the middle of an update would."""
    import fcntl

    from swarmdeck.probes.slice_owner import record_path

    record = record_path(slice_path)
    fd = os.open(f"{record}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return fd


def test_a_runner_of_the_owner_goes_by_a_held_record_lock_when_nothing_changes(
    isolated_home: Path, v1_slice: Path
) -> None:
    config = write_config(isolated_home / "a.toml", v1_slice, 100 * MIB)
    assert _run(isolated_home, "state", config).returncode == 0
    held = _hold_record_lock(v1_slice)
    try:
        assert _run(isolated_home, "state", config).returncode == 0
        write_config(config, v1_slice, 80 * MIB)
        changing = _run(isolated_home, "state", config)
    finally:
        os.close(held)
    assert changing.returncode == 251
    assert "is locked by another process" in changing.stderr
    assert _limit(v1_slice) == 100 * MIB


def _swarmdeck(home: Path, state: str, config: Path, *args: str, stdin: str = ""
               ) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, SWARMDECK_STATE_DIR=str(home / state), SWARMDECK_CONFIG=str(config))
    return subprocess.run([SWARMDECK, *args], input=stdin, capture_output=True, text=True,
                          env=env, timeout=60, check=False)


def test_status_probe_and_the_hook_say_what_the_runner_says_of_a_slice_another_ledger_owns(
    isolated_home: Path, v1_slice: Path
) -> None:
    import json

    from claude_lines import bash_payload

    first = write_config(isolated_home / "a.toml", v1_slice, 100 * MIB)
    second = write_config(isolated_home / "b.toml", v1_slice, 100 * MIB)
    assert _run(isolated_home, "state-a", first).returncode == 0
    refused = _run(isolated_home, "state-b", second)
    assert refused.returncode == 251
    said = refused.stderr.strip().removeprefix("swarmdeck: ")
    assert f"(config {first})" in said
    for command in (["status", "--json"], ["probe", "--json"]):
        done = _swarmdeck(isolated_home, "state-b", second, *command)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["hosts"][0]["slice_problem"] == said
    owner = _swarmdeck(isolated_home, "state-a", first, "probe", "--json")
    assert json.loads(owner.stdout)["hosts"][0]["slice_problem"] == ""
    payload = json.dumps(bash_payload("pytest -q tests", cwd=str(isolated_home)))
    hook = _swarmdeck(isolated_home, "state-b", second, "hook", "pre-tool-use", stdin=payload)
    context = json.loads(hook.stdout)["hookSpecificOutput"]["additionalContext"]
    assert f"Conclusion: cannot run here: {said}." in context
    assert "can run here" not in context


def test_the_refusal_names_the_owners_config_or_its_defaults(
    isolated_home: Path, v1_slice: Path, tmp_path: Path
) -> None:
    from swarmdeck.actions.cage import open_backend
    from swarmdeck.actions.cage.slice_claim import claim_slice
    from swarmdeck.probes.slice_owner import slice_problem

    owner_ledger, other = tmp_path / "a.db", tmp_path / "b.db"
    owner_ledger.touch()
    claim_slice(open_backend(str(v1_slice)), owner_ledger, None, 100 * MIB)
    assert slice_problem(v1_slice, owner_ledger) == ""
    assert slice_problem(v1_slice, other) == (
        f"slice {v1_slice} belongs to the ledger {owner_ledger} (config defaults), not to this"
        f" one ({other}): give this state folder its own slice (`[memory] slice = \"…\"` in"
        " its config), or use that state folder"
    )
    owner_ledger.unlink()
    assert slice_problem(v1_slice, other) == ""


@pytest.mark.parametrize("reserve", ["100%", f"{mem_total() // (1 << 30) + 2}G"])
def test_a_reserve_that_leaves_no_slice_is_refused_in_one_line_before_anything_is_written(
    isolated_home: Path, v1_slice: Path, reserve: str
) -> None:
    config = write_config(isolated_home / "a.toml", v1_slice, 0, reserve=reserve)
    before = _limit(v1_slice)
    refused = _run(isolated_home, "state", config)
    assert refused.returncode == 251
    said = refused.stderr.removeprefix("swarmdeck: ")
    assert said.count("\n") == 1
    assert f"memory.reserve = {reserve} ({config}:3)" in said
    assert f"MemTotal {format_size(mem_total())}" in said and "give a reserve below" in said
    assert _limit(v1_slice) == before
    assert read_owner(v1_slice) is None
    status = _swarmdeck(isolated_home, "state", config, "status", "--json")
    (host,) = json.loads(status.stdout)["hosts"]
    assert host["slice_problem"] == said.strip()


def test_a_cap_the_kernel_refuses_is_not_recorded_as_set(
    isolated_home: Path, v1_slice: Path
) -> None:
    config = write_config(isolated_home / "a.toml", v1_slice, 100 * MIB)
    assert _run(isolated_home, "state", config).returncode == 0
    grow = isolated_home / "grow"
    holder = subprocess.Popen(hog(30, hold=60, after=grow), stdout=subprocess.PIPE, text=True)
    try:
        (v1_slice / "cgroup.procs").write_text(str(holder.pid))
        grow.touch()
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        # The slice holds 30M that cannot be reclaimed (no swap, or memsw capped with it).
        write_config(config, v1_slice, 10 * MIB)
        refused = _run(isolated_home, "state", config)
    finally:
        holder.kill()
        holder.wait()
    assert refused.returncode == 251
    assert "cannot write" in refused.stderr
    owner = read_owner(v1_slice)
    assert owner is not None and owner.cap == 100 * MIB
    assert _limit(v1_slice) == 100 * MIB


def test_status_says_when_the_config_gives_another_cap_than_the_slice_holds(
    isolated_home: Path, v1_slice: Path
) -> None:
    """Changing memory.reserve changes the book at once but the slice's limit only at the next
    run: status names both caps instead of showing two rooms that disagree without a word."""
    config = write_config(isolated_home / "a.toml", v1_slice, 100 * MIB)
    assert _run(isolated_home, "state", config).returncode == 0
    write_config(config, v1_slice, 80 * MIB)
    env = dict(os.environ, SWARMDECK_STATE_DIR=str(isolated_home / "state"),
               SWARMDECK_CONFIG=str(config))
    status = subprocess.run([SWARMDECK, "status"], capture_output=True, text=True, env=env,
                            timeout=60, check=False)
    assert status.returncode == 0, status.stderr
    said = " ".join(status.stdout.split())
    assert f"slice cap {format_size(100 * MIB)} set " in said, said
    assert f"the config now gives {format_size(80 * MIB)}, which the next run sets" in said, said
    assert "room in the slice " in said and "on the machine " in said, said


def _forget_ledger(home: Path, state: str) -> None:
    """Take a ledger away as moving its state folder would."""
    for name in ("state.db", "state.db-wal", "state.db-shm"):
        (home / state / name).unlink(missing_ok=True)


def test_a_claim_holds_while_the_slice_holds_a_process_though_its_ledger_is_gone(
    isolated_home: Path, v1_slice: Path
) -> None:
    """The owner's folder moved away while its job still ran in the slice: another ledger may
    not start booking that slice beside the job nobody books any longer."""
    first = write_config(isolated_home / "a.toml", v1_slice, 100 * MIB)
    assert _run(isolated_home, "state-a", first).returncode == 0
    holder = subprocess.Popen(["sleep", "60"])
    try:
        (v1_slice / "cgroup.procs").write_text(str(holder.pid))
        _forget_ledger(isolated_home, "state-a")
        second = write_config(isolated_home / "b.toml", v1_slice, 60 * MIB)
        refused = _run(isolated_home, "state-b", second)
    finally:
        holder.kill()
        holder.wait()
    assert refused.returncode == 251, refused.stderr
    (line,) = refused.stderr.strip().splitlines()
    assert str(isolated_home / "state-a" / "state.db") in line
    assert "is gone" in line and str(holder.pid) in line
    owner = read_owner(v1_slice)
    assert owner is not None and owner.ledger == str(isolated_home / "state-a" / "state.db")
    assert _limit(v1_slice) == 100 * MIB


def test_a_claim_whose_ledger_is_gone_and_slice_empty_lapses_in_one_line(
    isolated_home: Path, v1_slice: Path
) -> None:
    first = write_config(isolated_home / "a.toml", v1_slice, 100 * MIB)
    assert _run(isolated_home, "state-a", first).returncode == 0
    _forget_ledger(isolated_home, "state-a")
    second = write_config(isolated_home / "b.toml", v1_slice, 60 * MIB)
    taken = _run(isolated_home, "state-b", second)
    assert taken.returncode == 0, taken.stderr
    (line,) = [line for line in taken.stderr.splitlines() if "lapses" in line]
    assert str(isolated_home / "state-a" / "state.db") in line
    assert str(isolated_home / "state-b" / "state.db") in line
    again = _run(isolated_home, "state-b", second)
    assert "lapses" not in again.stderr


def test_a_state_folder_without_its_own_slice_is_warned_once_before_it_claims(
    isolated_home: Path
) -> None:
    """SWARMDECK_STATE_DIR names a private ledger, and a config without `[memory] slice` would
    make that ledger the owner of the machine's slice; said once per folder, first. (The
    reserve here leaves no slice, so the run stops before it claims anything.)"""
    config = isolated_home / "c.toml"
    config.write_text('[memory]\nreserve = "100%"\n')
    first = _run(isolated_home, "state-w", config)
    second = _run(isolated_home, "state-w", config)
    assert first.returncode == second.returncode == 251
    lines = first.stderr.strip().splitlines()
    assert len(lines) == 2, first.stderr
    assert "SWARMDECK_STATE_DIR" in lines[0] and "[memory] slice" in lines[0]
    assert "memory.reserve" in lines[1]
    assert "SWARMDECK_STATE_DIR" not in second.stderr
    own = write_config(isolated_home / "own.toml", "swarmdeck-own-test", 0, reserve="100%")
    assert "SWARMDECK_STATE_DIR" not in _run(isolated_home, "state-o", own).stderr


def test_an_owner_record_of_a_slice_gone_with_its_ledger_is_removed(
    isolated_home: Path, v1_slice: Path, tmp_path: Path
) -> None:
    from cagekit import new_slice, remove_tree

    from swarmdeck.actions.cage import open_backend
    from swarmdeck.actions.cage.slice_claim import claim_slice
    from swarmdeck.probes.slice_owner import record_path

    gone_ledger, kept_ledger = tmp_path / "gone.db", tmp_path / "kept.db"
    gone_ledger.touch()
    kept_ledger.touch()
    other = new_slice()
    try:
        claim_slice(open_backend(str(other)), gone_ledger, None, 50 * MIB)
    finally:
        remove_tree(other)
    gone_ledger.unlink()
    stale = Path(record_path(other))
    assert stale.exists()
    claim_slice(open_backend(str(v1_slice)), kept_ledger, None, 50 * MIB)
    assert not stale.exists() and not Path(f"{stale}.lock").exists()
    assert Path(record_path(v1_slice)).exists()
