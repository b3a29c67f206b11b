"""Rewrites of heavy work and of timers that the strict preset must see, through real
`swarmdeck hook pre-tool-use` processes: a script reached twice in two contexts, a script fed
to a shell on stdin, brace expansion, coproc, tmux and script, summed sleeps (denied); and what
cannot be known before the command runs (text piped into a shell, a command word only known at
run time, a script that is not read) reminded, never denied."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from claude_lines import bash_payload
from swarmdeck.hooks.shell_parse import SCRIPT_DEPTH, SCRIPT_LIMIT

SID = "cccc3333-0000-4000-8000-000000000231"
STRICT = '[guards]\npreset = "strict"\n'


def _scripts(folder: Path) -> None:
    (folder / "v.sh").write_text("pytest -q\n")
    (folder / "w.sh").write_text("bash v.sh\n")
    (folder / "loop.sh").write_text("while ! test -f done; do sleep 5; done\n")
    (folder / "big.sh").write_text("# padding\n" * (SCRIPT_LIMIT // 10 + 1) + "pytest -q\n")
    for level in range(1, SCRIPT_DEPTH + 2):
        (folder / f"d{level}.sh").write_text(f"bash d{level + 1}.sh\n")
    (folder / f"d{SCRIPT_DEPTH + 2}.sh").write_text("pytest -q\n")
    os.mkfifo(folder / "fifo.sh")


DENIED = [
    ("heavy-outside-cage", "swarmdeck run -- bash v.sh; bash v.sh"),
    ("heavy-outside-cage", "swarmdeck run -- bash v.sh && bash w.sh"),
    ("wait-loop", "timeout 600 bash loop.sh; bash loop.sh"),
    ("wait-loop", "bash loop.sh & timeout 600 bash loop.sh"),
    ("heavy-outside-cage", "bash < v.sh"),
    ("heavy-outside-cage", "bash -s < v.sh"),
    ("heavy-outside-cage", "{pytest,-q}"),
    ("heavy-outside-cage", "coproc pytest"),
    ("heavy-outside-cage", 'tmux new -d "pytest"'),
    ("heavy-outside-cage", "tmux new-session -d -s t 'pytest -q'"),
    ("heavy-outside-cage", "script -qc pytest"),
    ("heavy-outside-cage", "script -q -c 'pytest -q' /dev/null"),
    ("timer", "sleep 29; sleep 29; sleep 29; echo check"),
    ("timer", "sleep 20 && sleep 20"),
]
REMINDED = [
    "cat v.sh | bash",
    "echo pytest | bash",
    "X=pytest; $X",
    "bash big.sh",
    "bash d1.sh",
    "bash fifo.sh",
]


def _run(run_hook, home: Path, command: str):
    (home / "config.toml").write_text(STRICT)
    project = home / "proj"
    project.mkdir()
    _scripts(project)
    done = run_hook("pre-tool-use", bash_payload(command, session_id=SID, cwd=str(project)))
    assert done.returncode == 0, done.stderr
    return done


@pytest.mark.parametrize("guard,command", DENIED, ids=[c for _, c in DENIED])
def test_the_rewrite_is_denied(run_hook, isolated_home: Path, guard: str, command: str) -> None:
    done = _run(run_hook, isolated_home, command)
    out = (done.answer or {}).get("hookSpecificOutput", {})
    assert out.get("permissionDecision") == "deny", done.stdout
    assert out["permissionDecisionReason"].startswith(f"swarmdeck guard {guard} (refused)")


@pytest.mark.parametrize("command", REMINDED)
def test_what_cannot_be_known_before_it_runs_is_reminded(
    run_hook, isolated_home: Path, command: str
) -> None:
    done = _run(run_hook, isolated_home, command)
    out = (done.answer or {}).get("hookSpecificOutput", {})
    assert "permissionDecision" not in out, done.stdout
    assert "swarmdeck guard heavy-outside-cage (reminder)" in done.context, done.stdout


@pytest.mark.parametrize("command,also", [("(make test &) &", "wait-loop: "),
                                          ("sleep 60; pytest", "timer: ")])
def test_a_deny_whose_form_is_refused_too_says_every_reason(
    run_hook, isolated_home: Path, command: str, also: str
) -> None:
    done = _run(run_hook, isolated_home, command)
    reason = (done.answer or {}).get("hookSpecificOutput", {}).get("permissionDecisionReason", "")
    assert reason.startswith("swarmdeck guard heavy-outside-cage (refused)"), done.stdout
    assert also in reason, reason
