"""`swarmdeck gpu-run` and `swarmdeck lock …` through the real command line (no GPU here)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from swarmdeck.cli import main
from swarmdeck.exitcodes import ExitCode


@pytest.fixture
def holder() -> Iterator[int]:
    proc = subprocess.Popen(["sleep", "60"])
    try:
        yield proc.pid
    finally:
        proc.kill()
        proc.wait()


def test_lock_acquire_show_refuse_release(
    tmp_path: Path, holder: int, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(tmp_path)
    assert main(["lock", "acquire", path, "--session", "A", "--pid", str(holder)]) == 0
    assert f"locked by session A, process {holder}" in capsys.readouterr().out
    assert main(["lock", "show", path]) == 0
    assert f"held by session A, process {holder} (sleep 60)" in capsys.readouterr().out
    refused = main(["lock", "acquire", path, "--session", "B", "--no-wait"])
    assert refused == ExitCode.REFUSED
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"held by session A, process {holder}" in err
    assert main(["lock", "release", path, "--session", "B"]) == ExitCode.REFUSED
    assert main(["lock", "release", path, "--session", "A"]) == 0
    capsys.readouterr()
    assert main(["lock", "show"]) == 0
    assert capsys.readouterr().out == "no workspace locks\n"


def test_lock_acquire_of_a_path_in_no_folder_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nonexistent" / "dir"
    assert main(["lock", "acquire", str(missing), "--session", "A"]) == ExitCode.USAGE
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"its folder {missing.parent} does not exist" in err


def test_lock_claim_and_cleanup(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "work"
    assert main(["lock", "claim", str(root / "scratch"), "--session", "A"]) == 0
    assert main(["lock", "claim", str(root / "other"), "--session", "B"]) == 0
    capsys.readouterr()
    assert main(["lock", "cleanup", "--root", str(root), "--session", "A"]) == 0
    out = capsys.readouterr().out
    assert f"removed {root / 'scratch'}" in out
    assert f"kept {root / 'other'}: owned by session B" in out
    assert main(["lock", "cleanup", "--session", "A"]) == ExitCode.USAGE


def test_processes_cleanup_could_not_look_into_are_said_in_plain_words() -> None:
    from swarmdeck.cli.lock import unchecked_line

    assert unchecked_line((1,), removed=True) == (
        "1 process (pid 1) could not be inspected (another user's, or more privileged than"
        " you): a directory removed above may have been in use by it"
    )
    assert unchecked_line(tuple(range(2, 10)), removed=False) == (
        "8 processes (pids 2, 3, 4, 5, 6, …) could not be inspected (another user's, or more"
        " privileged than you): nothing was removed, so none of them lost a directory"
    )


def test_cleanup_never_prints_the_bare_pid_list(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "work"
    assert main(["lock", "claim", str(root / "scratch"), "--session", "A"]) == 0
    capsys.readouterr()
    assert main(["lock", "cleanup", "--root", str(root), "--session", "A"]) == 0
    out = capsys.readouterr().out
    assert "could not check processes" not in out
    assert all(line.startswith(("removed ", "kept ")) or "could not be inspected" in line
               for line in out.splitlines()), out


def test_gpu_run_without_a_gpu_refuses_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ran = tmp_path / "ran"
    assert main(["gpu-run", "--", "touch", str(ran)]) == ExitCode.REFUSED
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no GPU" in err
    assert not ran.exists()
    assert main(["gpu-run"]) == ExitCode.USAGE


def test_status_json_lists_gpus_and_locks_with_owners(
    tmp_path: Path, holder: int, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    root = tmp_path / "work"
    (tmp_path / "config.toml").write_text(f'[locks]\nwork_root = "{root}"\n')
    assert main(["lock", "acquire", str(tmp_path), "--session", "A", "--pid", str(holder)]) == 0
    assert main(["lock", "claim", str(root / "scratch"), "--session", "A", "--purpose", "p"]) == 0
    capsys.readouterr()
    assert main(["status", "--json"]) == 0
    snapshot = json.loads(capsys.readouterr().out)
    (gpu,) = snapshot["gpus"]
    assert gpu["index"] is None and gpu["state"] == "no GPU"
    lock, owner = snapshot["locks"]
    assert (lock["kind"], lock["state"], lock["pid"], lock["session"]) == (
        "lock",
        "held",
        holder,
        "A",
    )
    assert (owner["kind"], owner["path"], owner["session"]) == ("owner", str(root / "scratch"), "A")
    assert owner["command"] == "p" and owner["state"] == "owned"


@pytest.mark.parametrize(
    "argv",
    [
        ["show"],
        ["show", "."],
        ["acquire", ".", "--session", "A"],
        ["release", ".", "--session", "A"],
    ],
    ids=" ".join,
)
def test_every_lock_subcommand_refuses_a_state_folder_that_is_a_file(
    isolated_home: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    state = isolated_home / "state"
    state.write_text("not a folder\n")
    assert main(["lock", *argv]) == ExitCode.USAGE
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == f"swarmdeck: state folder {state} is not a folder\n"
    assert state.read_text() == "not a folder\n"


def test_lock_show_refuses_a_state_folder_others_may_write_to(
    isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    state = isolated_home / "state"
    state.mkdir(mode=0o700)
    state.chmod(0o777)
    assert main(["lock", "show"]) == ExitCode.USAGE
    assert "may be written by others" in capsys.readouterr().err


def test_lock_show_without_a_state_folder_says_there_are_no_locks_and_makes_none(
    isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["lock", "show"]) == 0
    assert capsys.readouterr().out == "no workspace locks\n"
    assert main(["lock", "show", str(isolated_home)]) == 0
    assert capsys.readouterr().out == f"{isolated_home}: free\n"
    assert not (isolated_home / "state").exists()


@pytest.mark.parametrize(
    "argv",
    [["acquire", "", "--session", "A"], ["release", ""], ["show", ""], ["claim", ""]],
    ids=" ".join,
)
def test_an_empty_path_is_refused_rather_than_read_as_this_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    argv: list[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["lock", *argv]) == ExitCode.USAGE
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "an empty path names no folder" in err, err
    assert main(["lock", "show", str(tmp_path)]) == 0
    assert capsys.readouterr().out == f"{tmp_path}: free\n"
    assert not (tmp_path / ".swarmdeck-owner").exists()


def test_pid_0_names_no_holder_rather_than_the_default_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["lock", "acquire", str(tmp_path), "--session", "A", "--pid", "0"]) == 251
    assert "no process 0 to hold the lock" in capsys.readouterr().err
    assert main(["lock", "show", str(tmp_path)]) == 0
    assert capsys.readouterr().out == f"{tmp_path}: free\n"


def test_lock_claim_of_a_folder_not_directly_under_the_work_root_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "work"
    root.mkdir()
    config = tmp_path / "config.toml"
    config.write_text(f'[locks]\nwork_root = "{root}"\n')
    monkeypatch.setenv("SWARMDECK_CONFIG", str(config))
    for outside in (tmp_path / "elsewhere" / "z", root / "deeper" / "z"):
        assert main(["lock", "claim", str(outside), "--session", "A"]) == ExitCode.USAGE
        err = capsys.readouterr().err
        assert err.count("\n") == 1, err
        assert f"not a folder directly under locks.work_root {root}" in err, err
        assert not outside.exists()
    assert main(["lock", "claim", str(root / "inside"), "--session", "A"]) == 0
    assert capsys.readouterr().out == f"{root / 'inside'}: owned by session A\n"


def test_lock_claim_without_a_work_root_says_where_it_is_listed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["lock", "claim", str(tmp_path / "scratch"), "--session", "A"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{tmp_path / 'scratch'}: owned by session A\n")
    assert "set locks.work_root" in out and "lock cleanup --root" in out
