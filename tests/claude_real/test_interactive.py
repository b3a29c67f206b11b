"""The real CLI in tmux: a permission prompt, seen waiting, then answered."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest
from claude_rig import Rig, wait_for


def bash(tool_id: str, command: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": tool_id, "name": "Bash",
            "input": {"command": command, "description": "make it"}}


def session(rig: Rig) -> dict[str, Any] | None:
    sessions = rig.sessions()
    return sessions[0] if sessions else None


def waiting(rig: Rig) -> dict[str, Any] | None:
    found = session(rig)
    return found if found and found["waiting_for"] else None


@pytest.mark.parametrize("answer", ["approve", "decline"])
def test_permission_prompt_waits_then_clears(rig: Rig, answer: str) -> None:
    rig.script({"match": "make a file", "reply": [bash("toolu_p1", "touch made.txt")]})
    rig.interactive("--permission-mode", "manual")
    rig.wait_screen("manual mode on")
    rig.keys("make a file", "Enter")
    rig.wait_screen("Do you want to proceed?")
    found = wait_for(lambda: waiting(rig), 30, "status --json to show the wait")
    assert found["live"] and found["state"] == "waiting"
    assert "permission" in found["waiting_for"].lower()
    assert found["waiting_since"] is not None
    # Claude Code's Notification hook comes a few seconds into the wait; the answer after it.
    wait_for(lambda: "Notification" in rig.events(), 30, "the Notification hook")
    assert rig.events()[:3] == ["SessionStart", "PreToolUse", "PermissionRequest"]
    if answer == "approve":
        rig.keys("1")
        wait_for(lambda: (rig.project / "made.txt").exists(), 30, "the approved command")
    else:
        rig.keys("Escape")
        wait_for(lambda: "Do you want to proceed?" not in rig.screen(), 30, "the prompt gone")
    wait_for(lambda: any(p.get("status") == "idle" for p in rig.pid_files()), 30,
             "the pid file to say idle")
    cleared = session(rig)
    assert cleared is not None and cleared["live"]
    assert cleared["waiting_for"] is None, cleared
    assert cleared["waiting_since"] is None
    assert cleared["state"] == "idle"
    assert (rig.project / "made.txt").exists() == (answer == "approve")
    if answer == "approve":
        assert "PostToolUse" in rig.events()


def test_an_interactive_session_keeps_its_title_after_exit(rig: Rig) -> None:
    from swarmdeck.probes.claude.sessions import SessionsProbe

    probe = SessionsProbe(rig.config_dir)
    rig.interactive("--permission-mode", "manual")
    rig.wait_screen("manual mode on")
    rig.keys("say hello", "Enter")
    wait_for(lambda: "Done." in rig.screen(), 30, "the answer")
    name = wait_for(lambda: [p.get("name") for p in rig.pid_files()], 30, "the pid file")[0]
    live = wait_for(lambda: [s for s in probe.refresh() if s.live], 30, "the live session")
    assert live[0].title == name
    assert live[0].mode == "interactive"
    assert live[0].to_json()["mode"] == "interactive"
    assert [(s["live"], s["title"]) for s in rig.sessions()] == [(True, name)]
    rig.keys("/exit", "Enter")
    wait_for(lambda: not rig.pid_files(), 30, "the pid file removed at exit")
    ended = probe.refresh()
    assert [(s.live, s.title) for s in ended] == [(False, name)]
    # A later `status`, a process that never saw the session live: swarmdeck's state kept it.
    assert [(s["live"], s["title"]) for s in rig.sessions()] == [(False, name)]
    ends = wait_for(lambda: [d.get("reason") for e, d in rig.hook_events() if e == "SessionEnd"],
                    30, "the SessionEnd hook")
    assert ends == ["prompt_input_exit"]


def test_go_switches_a_tmux_client_to_the_sessions_pane(rig: Rig) -> None:
    """A client of the tmux server the session runs in (attached from a second server's pane,
    as a person's terminal would be) is switched to the pane the pid file names."""
    import subprocess

    from swarmdeck.tmux_pane import go_to_pane

    rig.interactive("--permission-mode", "manual")
    rig.wait_screen("manual mode on")
    session = wait_for(lambda: [s for s in rig.sessions() if s["live"] and s["tmux"]], 30,
                       "the live session's pane")[0]
    [pid_file] = rig.pid_files()
    assert session["tmux"] == pid_file["tmux"]
    assert session["mode"] == "interactive"
    outside = go_to_pane(session["tmux"], {})
    assert not outside.switched and "tmux switch-client -t %" in outside.message

    socket = str(rig.tmux_socket)
    subprocess.run(["tmux", "-S", socket, "new-session", "-d", "-s", "viewer"], check=True)
    terminal = str(rig.root / "terminal.sock")
    subprocess.run(["tmux", "-S", terminal, "new-session", "-d", "-x", "100", "-y", "30",
                    f"env -u TMUX tmux -S {socket} attach -t viewer"], check=True)
    try:
        def client_on(name: str) -> bool:
            clients = subprocess.run(
                ["tmux", "-S", socket, "list-clients", "-F", "#{client_session} #{pane_id}"],
                capture_output=True, text=True, check=False).stdout.split("\n")
            return any(line.split(" ")[:1] == [name] for line in clients)

        wait_for(lambda: client_on("viewer"), 20, "the viewer's client")
        pane = session["tmux"].rsplit(".", 1)[-1]
        done = go_to_pane(session["tmux"], {"TMUX": f"{socket},0,0", "PATH": "/usr/bin:/bin"})
        assert done.switched, done.message
        target = session["tmux"].split(":", 1)[0]
        wait_for(lambda: client_on(target), 20, "the client on the session's pane")
        active = subprocess.run(["tmux", "-S", socket, "display", "-p", "-t", pane,
                                 "#{pane_active}"], capture_output=True, text=True).stdout
        assert active.strip() == "1"
    finally:
        subprocess.run(["tmux", "-S", terminal, "kill-server"], capture_output=True, check=False)


def test_claude_agents_json_tells_nothing_the_pid_file_does_not(rig: Rig) -> None:
    """`claude agents --json` (2.1.328) lists the running sessions from the same facts as
    their pid files, fewer of them (no entrypoint, tmux pane, status time), and no subagents:
    the control room reads the pid files, which cost no process start."""
    rig.interactive("--permission-mode", "manual")
    rig.wait_screen("manual mode on")
    [pid_file] = wait_for(lambda: [p for p in rig.pid_files() if "status" in p], 30,
                          "the pid file with its status")
    done = subprocess.run(rig.command("agents", "--json"), cwd=rig.project, env=rig.env(),
                          capture_output=True, text=True, timeout=60, check=False,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    [listed] = json.loads(done.stdout)
    assert set(listed) <= set(pid_file), sorted(set(listed) - set(pid_file))
    assert {k: v for k, v in listed.items() if k != "status"} == {
        k: pid_file[k] for k in listed if k != "status"}
