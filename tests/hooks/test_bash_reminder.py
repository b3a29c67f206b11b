"""The heavy-command reminder: resource table, history, conclusion and the exact run line."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from claude_lines import bash_payload
from swarmdeck.actions.booking import Booking, Via
from swarmdeck.actions.fingerprint import fingerprint
from swarmdeck.actions.oom import SLICE_FULL_OVER_BOOKING
from swarmdeck.hooks.bash_reminder import decide
from swarmdeck.hooks.guards import run_argv
from swarmdeck.hooks.resources import HostFacts
from swarmdeck.hooks.shell_parse import caged_argv, parse
from swarmdeck.state import StateStore
from swarmdeck.views.hosts import HostFigures

GIB = 1024**3
SWARMDECK = Path(sys.executable).parent / "swarmdeck"
"""The console script the hooks run as, by the absolute path `hooks install` writes."""


def _heavy(run_hook, command: str, cwd: Path) -> str:
    done = run_hook("pre-tool-use", bash_payload(command, cwd=str(cwd)))
    assert done.returncode == 0
    answer = done.answer
    assert answer is not None, done.stderr
    output = answer["hookSpecificOutput"]
    assert output["hookEventName"] == "PreToolUse"
    assert "permissionDecision" not in output  # it reminds, it never decides
    return output["additionalContext"]


def test_heavy_command_gets_the_table_and_a_run_line(run_hook, tmp_path: Path) -> None:
    text = _heavy(run_hook, "pytest -q tests", tmp_path)
    assert "heavy command (pytest)" in text
    assert "(here): " in text and " cores · load " in text
    assert "threads free" in text and "memory room" in text
    assert "GPU free " in text or " · no GPU\n" in text
    assert "no run recorded yet" in text
    assert "Conclusion: can run here" in text  # ", but its cores are saturated" when loaded
    assert f"Run it as: {SWARMDECK} run --label pytest -- pytest -q tests" in text
    assert "GPU free no GPU" not in text


def _recorded_run(cwd: Path, outcome: str, hit_ceiling: bool) -> None:
    """One run of `pytest -q tests` in `cwd` in the ledger: a 3G peak of a 6G cap in 4m12s."""
    store = StateStore.open_default()
    print_ = fingerprint(["pytest", "-q", "tests"], cwd)
    with store.transaction() as conn:
        conn.execute(
            "INSERT INTO peaks (fingerprint, peak, hit_ceiling, cap, duration, outcome,"
            " recorded_at) VALUES (?, ?, ?, ?, 252.0, ?, 100.0)",
            (print_, 3 * GIB, int(hit_ceiling), 6 * GIB, outcome),
        )
    store.close()


def test_history_of_this_command_is_shown(run_hook, tmp_path: Path) -> None:
    _recorded_run(tmp_path, "ok", hit_ceiling=False)
    text = _heavy(run_hook, "pytest -q tests", tmp_path)
    assert "last run peaked at 3G in 4m12s, outcome ok (1 run recorded)" in text
    assert "--cap" in text


@pytest.mark.parametrize(
    ("outcome", "said"),
    [
        ("own cap", "outcome own cap, hit its memory ceiling (1 run recorded)"),
        (SLICE_FULL_OVER_BOOKING, f"outcome {SLICE_FULL_OVER_BOOKING} (1 run recorded)"),
    ],
)
def test_only_a_run_stopped_at_its_own_cap_is_said_to_hit_its_ceiling(
    run_hook, tmp_path: Path, outcome: str, said: str
) -> None:
    """Both runs are remembered at their ceiling, so the next one books its cap; but one
    squeezed out of a full slice stopped where the slice ran out, not at its cap."""
    _recorded_run(tmp_path, outcome, hit_ceiling=True)
    text = _heavy(run_hook, "pytest -q tests", tmp_path)
    assert f"last run peaked at 3G in 4m12s, {said}" in text


def test_command_that_never_fits_says_by_how_much(run_hook, tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text('[memory]\nreserve = "99%"\n')
    text = _heavy(run_hook, "cargo build --release", tmp_path)
    assert "Conclusion: cannot run: short by" in text


def test_compound_command_runs_under_bash_c(run_hook, tmp_path: Path) -> None:
    text = _heavy(run_hook, "cd sub && make -j8 test", tmp_path)
    assert f"{SWARMDECK} run --label make -- bash -c 'cd sub && make -j8 test'" in text


def test_peer_without_cached_figures_is_not_read(run_hook, tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text(
        '[[hosts]]\nname = "box2"\naddress = "127.0.0.1"\n\n'
        '[[hosts]]\nname = "box3"\naddress = "127.0.0.2"\nenabled = false\n'
    )
    text = _heavy(run_hook, "pytest", tmp_path)
    assert "- box2: not read (no cached figures)" in text
    assert "- box3: disabled" in text


def test_caged_command_gets_no_reminder_with_the_default_patterns(run_hook) -> None:
    done = run_hook("pre-tool-use", bash_payload("swarmdeck run --cap 2G -- pytest -q"))
    assert done.returncode == 0
    assert done.stdout == ""


def test_caged_command_matched_by_a_pattern_gets_no_reminder(
    run_hook, tmp_path: Path
) -> None:
    """The user's own patterns see each command the shell runs (shell_parse.py): the one after
    `--` runs in the cage, the allowed form, so there is nothing to remind of. (Before the
    parser the pattern saw the whole line and the reminder said it already ran caged.)"""
    (tmp_path / "config.toml").write_text("[hooks]\nheavy_patterns = ['mything']\n")
    done = run_hook("pre-tool-use", bash_payload("swarmdeck run --cap 2G -- mything -q"))
    assert done.returncode == 0 and done.stdout == ""
    text = _heavy(run_hook, "mything -q", tmp_path)
    assert "--label mything" in text


def test_run_argv_keeps_simple_commands_and_wraps_sequences() -> None:
    def argv(command: str) -> list[str]:
        return run_argv(command, parse(command))

    assert argv("pytest -q 'tests/a b'") == ["pytest", "-q", "tests/a b"]
    assert argv("FOO=1 make") == ["bash", "-c", "FOO=1 make"]
    assert argv("make; make test") == ["bash", "-c", "make; make test"]
    assert argv("pytest | tail") == ["bash", "-c", "pytest | tail"]
    assert argv("echo 'unterminated") == ["bash", "-c", "echo 'unterminated"]


def _host(name: str, room: int | None, local: bool = False, cap: int = 60 * GIB) -> HostFacts:
    state = "read" if room is not None else "not read"
    figures = HostFigures(cores=16, load=(2.0, 2.0, 2.0), threads_free=8, heavy_threads=16,
                          slice_cap=cap, room=room)
    return HostFacts(name, local, state, figures=figures, gpu="no GPU")


def test_decide_here_then_peer_then_short() -> None:
    booking = Booking(booked=8 * GIB, cap=12 * GIB, via=Via.HISTORY, oom_score_adj=500)
    here = decide(booking, [_host("a", 10 * GIB, True), _host("b", 20 * GIB)], "make", ["make"],
                  "make", False)
    assert here.text == "can run here"
    peer = decide(booking, [_host("a", 2 * GIB, True), _host("b", 20 * GIB)], "make", ["make"],
                  "make", False)
    assert peer.text == "can run on b"
    assert peer.line == (
        "No room here now. Run it in a checkout on b as: swarmdeck run --label make --cap 12G"
        " -- make; or queue it here with the same line (it waits for room)."
    )
    short = decide(booking, [_host("a", 2 * GIB, True), _host("b", None)], "make", ["make"],
                   "make", False)
    assert short.text == "cannot run: short by 6G"
    never = decide(booking, [_host("a", 2 * GIB, True, cap=4 * GIB)], "make", ["make"], "make",
                   False)
    assert "never admitted" in never.text


def test_only_a_swarmdeck_wrapper_with_its_command_counts_as_caged() -> None:
    def caged(command: str) -> list[str] | None:
        return caged_argv(command.split())

    assert caged("swarmdeck run --cap 4G -- pytest -q") == ["pytest", "-q"]
    assert caged("/opt/bin/swarmdeck dispatch --gpu -- python train.py") == [
        "python", "train.py"
    ]
    assert caged("swarmdeck status --json") is None
    assert caged("swarmdeck hooks install -- --user") is None
    assert caged("swarmdeck run --cap 4G") is None
    assert caged("pytest -q -- swarmdeck run") is None


def test_the_label_comes_from_the_parsed_command(run_hook, tmp_path: Path) -> None:
    """`(make test &) &` once suggested `--label '(make'`: the label is the program the shell
    runs, read by the parser."""
    text = _heavy(run_hook, "(make test &) &", tmp_path)
    assert "--label make " in text and "(make'" not in text
    text = _heavy(run_hook, "FOO=1 nohup ionice -c3 python -m pytest -q &", tmp_path)
    assert "--label pytest " in text


def test_the_reminder_states_the_threads_a_run_declares(
    run_hook, tmp_path: Path, isolated_home: Path
) -> None:
    (isolated_home / "config.toml").write_text("[cores]\nheavy_threads = 3\n")
    text = _heavy(run_hook, "pytest -q tests", tmp_path)
    assert "a run without --threads declares this host's 3 heavy threads" in text


def test_a_host_with_room_but_saturated_cores_says_so() -> None:
    """Load 7.49 on 2 cores: the memory fits, but the command shares the cores with the rest
    and runs slower; a peer with room and idle cores is named beside the line here."""
    booking = Booking(booked=8 * GIB, cap=12 * GIB, via=Via.HISTORY, oom_score_adj=500)
    busy = HostFacts("a", True, "read", gpu="no GPU", figures=HostFigures(
        cores=2, load=(7.49, 6.0, 5.0), threads_free=0, heavy_threads=2, slice_cap=60 * GIB,
        room=10 * GIB))
    here = decide(booking, [busy], "make", ["make"], "make", False)
    assert here.text == "can run here, but its cores are saturated (load 7.49 on 2 cores)"
    assert "runs slower" in here.line and "swarmdeck run --label make" in here.line
    idle = decide(booking, [busy, _host("b", 20 * GIB)], "make", ["make"], "make", False)
    assert idle.text.startswith("can run here, but its cores are saturated")
    assert "or in a checkout on b (load 2.00 on 16 cores)" in idle.line, idle.line
