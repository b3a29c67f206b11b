"""Which Claude Code processes a kill may reach: only one proven to be the process its pid file
names (its start ticks are the file's numeric `procStart`, its program is Claude Code's). A
leftover pid file naming whatever holds the pid now supervises nothing."""

from __future__ import annotations

import select
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from scene_kit import SWARMDECK
from test_kills import DEADLINE, finding_for

from claude_lines import ClaudeTree
from swarmdeck.probes.claude.live_sessions import is_claude_code_program, read_pid_file
from swarmdeck.probes.procs import ProcessIdentity, identity, process_table
from swarmdeck.state import StateStore
from swarmdeck.watchdog.kills import (
    NOT_SUPERVISED,
    STOPPED,
    approve,
    kill_request,
    request_kill,
    supervised_set,
)

SID = "5252bbbb-0000-4000-8000-000000000006"


def real_shaped(pid: int, **fields: object) -> dict[str, object]:
    """The fields besides `pid` and `sessionId` of a pid file as Claude Code 2.1.328 writes it
    on Linux (shared/reference/claude-code.md): `procStart` is the process's start ticks as a
    string."""
    return {
        "cwd": "/work/proj", "startedAt": 1796427373764,
        "version": "2.1.328", "peerProtocol": 1, "kind": "interactive", "entrypoint": "cli",
        "pidDomain": "linux:3d1219c7c4c5404aaa1f6d2a48adfda4:pid:[4026531836]",
        "messagingSocketPath": f"/tmp/cc-socks/{pid}.sock", "name": "proj-c6",
        "nameSource": "derived", "status": "busy", "updatedAt": 1796427373743,
        **fields,
    }


def fake_claude(folder: Path) -> Path:
    """A program of the test's own installed as `claude`: a copy of the shell, so that its
    executable is named as Claude Code's is."""
    folder.mkdir(parents=True, exist_ok=True)
    program = folder / "claude"
    shutil.copy(shutil.which("sh") or "/bin/sh", program)
    return program


def started(
    processes, *argv: str, **kwargs: object
) -> tuple[subprocess.Popen[str], ProcessIdentity]:
    proc = processes(*argv, stdout=subprocess.PIPE, **kwargs)
    assert proc.stdout.readline() == "ready\n"
    me = identity(proc.pid)
    assert me is not None
    return proc, me


def refused_and_alive(store: StateStore, me: ProcessIdentity) -> None:
    """Asking to stop `me` is refused as not supervised, and it still runs."""
    assert me not in supervised_set(store)
    request = request_kill(store, finding_for(me.pid, me.start_ticks), "tester", 1.0)
    outcome = approve(store, request.id, "tester", time.time(), grace=1.0)
    assert outcome.result == NOT_SUPERVISED, outcome.said
    assert me.is_alive()


SLEEPER = ("sh", "-c", "echo ready; exec sleep 300")


@pytest.mark.parametrize(
    "proc_start",
    [None, "Thu Sep 10 08:31:58 2026", "wrong"],
    ids=["no procStart", "date procStart", "wrong procStart"],
)
def test_a_leftover_pid_file_does_not_supervise_the_process_that_now_holds_its_pid(
    isolated_home, store, tree: ClaudeTree, processes, proc_start
):
    _proc, me = started(processes, *SLEEPER)
    fields = {} if proc_start is None else {"procStart": proc_start}
    if proc_start == "wrong":
        fields["procStart"] = str(me.start_ticks - 1)
    tree.write_pid_file(me.pid, SID, **real_shaped(me.pid, **fields))
    refused_and_alive(store, me)


def test_a_pid_file_naming_pid_1_supervises_nothing(isolated_home, store, tree, processes):
    """`"pid": 1` once made every process a descendant of a live session."""
    _proc, me = started(processes, *SLEEPER)
    init = identity(1)
    assert init is not None
    tree.write_pid_file(1, SID, **real_shaped(1, procStart=str(init.start_ticks)))
    other = tree.write_pid_file(me.pid, SID, **real_shaped(me.pid))
    other.write_text(other.read_text().replace(f'"pid": {me.pid}', '"pid": 1'))
    assert init not in supervised_set(store)
    refused_and_alive(store, me)


def test_a_process_with_the_recorded_start_that_is_not_claude_code_is_not_supervised(
    isolated_home, store, tree, processes
):
    _proc, me = started(processes, *SLEEPER)
    tree.write_pid_file(me.pid, SID, **real_shaped(me.pid, procStart=str(me.start_ticks)))
    refused_and_alive(store, me)


def test_a_claude_code_process_with_its_recorded_start_is_supervised_and_stopped(
    isolated_home, store, tree, processes
):
    claude = fake_claude(isolated_home / "bin")
    proc, me = started(processes, str(claude), "-c", "sleep 300 & echo ready; wait")
    tree.write_pid_file(me.pid, SID, **real_shaped(me.pid, procStart=str(me.start_ticks)))
    assert me in supervised_set(store)
    request = request_kill(store, finding_for(me.pid, me.start_ticks), "tester", 1.0)
    outcome = approve(store, request.id, "tester", time.time(), grace=2.0)
    assert outcome.result == STOPPED and "1 more process" in outcome.detail, outcome.said
    proc.wait(timeout=DEADLINE)


@pytest.mark.parametrize(
    ("program", "argv", "proven"),
    [
        ("/root/.local/share/claude/versions/2.1.328", [], True),
        ("/usr/lib/node_modules/@anthropic-ai/claude-code/bin/claude.exe", [], True),
        ("/opt/cc/node_modules/@anthropic-ai/claude-code-linux-x64/claude", [], True),
        ("/home/me/bin/claude", [], True),
        ("/usr/bin/node", ["claude"], True),
        ("/usr/bin/node", ["node", "/usr/lib/node_modules/@anthropic-ai/claude-code/cli.js"], True),
        ("/usr/bin/node", ["node", "server.js"], False),
        ("/usr/bin/sleep", ["claude"], False),
        ("/usr/bin/python3.11", ["python3", "claude"], False),
        ("/sbin/init", [], False),
    ],
)
def test_claude_codes_programs_are_told_by_their_executable(program, argv, proven):
    """Where 2.1.328's native binary runs from (checked: it keeps its executable's name, and
    npm's launcher runs `bin/claude.exe` itself), and older versions under node."""
    assert is_claude_code_program(program, argv) is proven


def test_a_program_named_for_the_version_its_pid_file_records_is_claude_codes() -> None:
    """The native installer's binary, copied elsewhere, keeps `versions/2.1.328`."""
    assert is_claude_code_program("/opt/cc/versions/2.1.328", [], "2.1.328")
    assert not is_claude_code_program("/opt/cc/versions/2.1.328", [], "2.1.329")
    assert not is_claude_code_program("/opt/cc/versions/2.1.328", [], None)


@pytest.mark.parametrize(
    ("program", "version"),
    [
        ("/usr/bin/sleep", "sleep"),
        ("/opt/cc/2.1.328", "2.1.328"),
        ("/opt/cc/versions/sleep", "sleep"),
        ("/opt/cc/versions/2.1", "2.1"),
        ("/opt/cc/versions/1.2.3.4", "1.2.3.4"),
        ("/opt/versions/x/2.1.328", "2.1.328"),
    ],
)
def test_a_pid_files_version_proves_only_a_version_shaped_name_in_a_versions_folder(
    program, version
):
    """Any process can write a pid file: its `version` names Claude Code's executable only as
    the native installer lays it out (`…/versions/N.N.N`)."""
    assert not is_claude_code_program(program, [], version)


def test_a_pid_file_whose_version_names_the_program_does_not_supervise_it(
    isolated_home, store, tree, processes
):
    """`"version": "sleep"` once made `/usr/bin/sleep` Claude Code, killable on approval."""
    _proc, me = started(processes, *SLEEPER)
    tree.write_pid_file(
        me.pid, SID, **real_shaped(me.pid, procStart=str(me.start_ticks), version="sleep")
    )
    refused_and_alive(store, me)


def test_a_pid_file_whose_pid_is_not_its_name_is_not_a_session(tmp_path: Path) -> None:
    tree = ClaudeTree(tmp_path / "claude")
    path = tree.write_pid_file(12345, SID)
    path.write_text(path.read_text().replace('"pid": 12345', '"pid": 1'))
    assert read_pid_file(path, 12345) is None


def test_approving_a_kill_from_inside_the_tree_it_stops_refuses_and_freezes_nothing(
    isolated_home, store, tree, processes
):
    """An agent approving its own session's kill: `swarmdeck approve` runs inside the tree it
    would stop. It once froze that tree and itself for good; now it refuses in one line (78)
    and nothing is left stopped."""
    claude = fake_claude(isolated_home / "bin")
    said_on_stderr = isolated_home / "approve.err"
    script = (f'echo ready; read id; {SWARMDECK} approve "$id" 2>{said_on_stderr};'
              ' echo "exit $?"; exec sleep 300')
    proc, me = started(processes, str(claude), "-c", script, stdin=subprocess.PIPE)
    tree.write_pid_file(me.pid, SID, **real_shaped(me.pid, procStart=str(me.start_ticks)))
    request = request_kill(store, finding_for(me.pid, me.start_ticks), "tester", 1.0)
    proc.stdin.write(f"{request.id}\n")
    proc.stdin.flush()
    ready, _, _ = select.select([proc.stdout], [], [], DEADLINE)
    said = proc.stdout.readline() if ready else ""
    stopped = [stat.pid for stat in process_table().values()
               if stat.session == me.pid and stat.state in "Tt"]
    assert said == "exit 78\n", f"the approver hung; stopped: {stopped}"
    assert stopped == []
    assert me.is_alive()
    [line] = said_on_stderr.read_text().splitlines()
    assert "would stop this command itself" in line and "another terminal" in line
    assert kill_request(store, request.id).state == "pending"
