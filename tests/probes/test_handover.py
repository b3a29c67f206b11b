"""`swarmdeck handover AGENT_ID`: a stopped subagent's task, files, commands and last message,
read from transcripts of the shapes Claude Code writes (tests/claude_lines.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from claude_lines import ClaudeTree, Lines
from swarmdeck.probes.claude.handover import (
    MAX_COMMANDS,
    TAIL_LINES,
    HandoverError,
    read_handover,
)

SID = "8888dddd-0000-4000-8000-000000000008"
AGENT = "a4f2e9c1b7d03e55"
PROMPT = "Fix the flaky test in tests/test_io.py and report what you changed."
SWARMDECK = str(Path(sys.executable).parent / "swarmdeck")


def bash_ok(lines: Lines, tool_id: str, command: str, stdout: str, at: float) -> None:
    """A Bash call that exited 0, as 2.1.x writes it: the output in the content and in
    `toolUseResult.stdout`."""
    lines.tool_use(tool_id, "Bash", {"command": command, "description": "run"}, at)
    lines.result(tool_id, stdout, at + 1, tool_use_result={
        "stdout": stdout, "stderr": "", "interrupted": False, "isImage": False,
    })


def bash_failed(lines: Lines, tool_id: str, command: str, code: int, output: str,
                at: float) -> None:
    """A Bash call that exited non-zero: an error result starting "Exit code N", and
    `toolUseResult` the same text as a string."""
    lines.tool_use(tool_id, "Bash", {"command": command}, at)
    text = f"Exit code {code}\n{output}"
    lines.result(tool_id, text, at + 1, is_error=True, tool_use_result=f"Error: {text}")


def interrupted_agent(tmp_path: Path) -> Path:
    """A subagent that wrote a file, edited one, ran three commands (ok, failed, ok), said
    something, and was stopped while its fourth command ran: the tool_use has no result."""
    tree = ClaudeTree(tmp_path / "claude")
    main = Lines(SID)
    main.prompt("fix the flaky test", 0)
    main.agent("toolu_dispatch1", "Fix flaky test", PROMPT, 1)
    tree.write_main(main)
    side = Lines(SID, sidechain=True, agent_id=AGENT)
    side.prompt(PROMPT, 2)
    side.tool_use("toolu_r1", "Read", {"file_path": "/work/proj/tests/test_io.py"}, 3)
    side.result("toolu_r1", "def test_io(): ...", 4)
    side.tool_use("toolu_w1", "Write", {"file_path": "/work/proj/tests/conftest.py",
                                         "content": "import pytest\n"}, 5)
    side.result("toolu_w1", "File created successfully", 6)
    side.tool_use("toolu_e1", "Edit", {"file_path": "/work/proj/src/io.py",
                                        "old_string": "a", "new_string": "b"}, 7)
    side.result("toolu_e1", "The file has been updated.", 8)
    side.tool_use("toolu_e2", "Edit", {"file_path": "/work/proj/src/io.py",
                                        "old_string": "c", "new_string": "d"}, 9)
    side.result("toolu_e2", "The file has been updated.", 10)
    bash_ok(side, "toolu_b1", "git status --short", " M src/io.py", 11)
    bash_failed(side, "toolu_b2", "pytest -q tests/test_io.py", 1,
                "\n".join(f"line {n}" for n in range(40)) + "\n1 failed", 13)
    side.text("The fixture leaks a file handle; closing it in conftest.", 15)
    bash_ok(side, "toolu_b3", "ruff check src", "All checks passed!", 16)
    side.tool_use("toolu_b4", "Bash", {"command": "pytest -q tests/test_io.py --count 50"}, 18)
    return tree.write_agent(side, meta={"agentType": "general-purpose",
                                        "description": "Fix flaky test",
                                        "toolUseId": "toolu_dispatch1"})


def test_a_subagent_interrupted_mid_tool_call_is_handed_over_whole(tmp_path: Path) -> None:
    interrupted_agent(tmp_path)
    handover = read_handover(tmp_path / "claude", AGENT)
    assert handover.prompt == PROMPT
    assert (handover.agent_type, handover.description) == ("general-purpose", "Fix flaky test")
    assert handover.files == ["/work/proj/tests/conftest.py", "/work/proj/src/io.py"]
    assert [(c.command, c.exit) for c in handover.commands] == [
        ("git status --short", "0"), ("pytest -q tests/test_io.py", "1"),
        ("ruff check src", "0"), ("pytest -q tests/test_io.py --count 50", "no result"),
    ]
    failed = handover.commands[1]
    assert failed.tail.splitlines()[-1] == "1 failed"
    assert len(failed.tail.splitlines()) == TAIL_LINES and "line 0\n" not in failed.tail
    assert handover.in_flight == "Bash pytest -q tests/test_io.py --count 50"
    assert handover.last_message == "The fixture leaks a file handle; closing it in conftest."
    text = handover.text()
    assert text.startswith(
        f"You take over from general-purpose {AGENT} (Fix flaky test), which was interrupted"
    )
    assert PROMPT in text and "/work/proj/src/io.py" in text
    assert "$ pytest -q tests/test_io.py  -> exit 1" in text
    assert "It was in the middle of: Bash pytest -q tests/test_io.py --count 50" in text


def test_a_user_interrupt_is_told_and_the_old_flat_layout_is_found(tmp_path: Path) -> None:
    """A 2.0.x subagent file lies flat in the project folder; the person pressed Esc."""
    tree = ClaudeTree(tmp_path / "claude")
    side = Lines(SID, sidechain=True, agent_id="flat01")
    side.prompt("Survey src/web.", 1)
    side.tool_use("toolu_g1", "Grep", {"pattern": "route"}, 2)
    side.result("toolu_g1", "[Request interrupted by user for tool use]", 3, is_error=True)
    side.user_blocks([{"type": "text", "text": "[Request interrupted by user for tool use]"}], 3)
    tree.write_flat_agent(side)
    handover = read_handover(tmp_path / "claude", "flat01")
    assert handover.prompt == "Survey src/web."
    assert handover.interrupted and handover.in_flight == ""
    assert "which was interrupted" in handover.text()
    assert handover.files == [] and handover.commands == []


def test_only_the_latest_commands_are_listed_and_the_rest_counted(tmp_path: Path) -> None:
    tree = ClaudeTree(tmp_path / "claude")
    side = Lines(SID, sidechain=True, agent_id="busy01")
    side.prompt("Run everything.", 1)
    for n in range(MAX_COMMANDS + 5):
        bash_ok(side, f"toolu_{n}", f"echo {n}", str(n), 2 + 2 * n)
    side.text("Done.", 200)
    tree.write_agent(side)
    handover = read_handover(tmp_path / "claude", "busy01")
    assert handover.commands_left_out == 5 and len(handover.commands) == MAX_COMMANDS
    assert handover.commands[0].command == "echo 5" and handover.in_flight == ""
    assert "(5 earlier commands left out)" in handover.text()
    assert "which stopped before finishing" in handover.text()


@pytest.mark.parametrize("agent_id", ["nosuch01", "../etc"])
def test_no_transcript_is_an_error_saying_where_it_looked(tmp_path: Path, agent_id: str) -> None:
    ClaudeTree(tmp_path / "claude")
    with pytest.raises(HandoverError):
        read_handover(tmp_path / "claude", agent_id)


def test_the_command_prints_the_prompt_text_or_json_and_refuses_an_unknown_agent(
    tmp_path: Path,
) -> None:
    interrupted_agent(tmp_path)
    text = subprocess.run([SWARMDECK, "handover", AGENT], capture_output=True, text=True)
    assert text.returncode == 0, text.stderr
    assert text.stdout.startswith(f"You take over from general-purpose {AGENT}")
    as_json = subprocess.run([SWARMDECK, "handover", AGENT, "--json"], capture_output=True,
                             text=True)
    data = json.loads(as_json.stdout)
    assert data["in_flight"].startswith("Bash pytest") and data["handover"] == text.stdout[:-1]
    assert data["commands"][1] == {"command": "pytest -q tests/test_io.py", "exit": "1",
                                   "tail": data["commands"][1]["tail"]}
    unknown = subprocess.run([SWARMDECK, "handover", "nosuch01"], capture_output=True, text=True)
    assert unknown.returncode == 251
    assert unknown.stderr.count("\n") == 1 and "no transcript of agent nosuch01" in unknown.stderr
