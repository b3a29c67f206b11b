"""Subagent statuses from line shapes seen in real transcripts of other tools' users.

Each test is modelled on lines published in the test data and docs of transcript readers
(claude-code-log, ccstatusline-style monitors, usage trackers) and on issue reports: the fields
are the ones Claude Code wrote, the identifiers are made up.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from claude_lines import ClaudeTree, Lines, iso
from swarmdeck.probes.claude.live_sessions import pid_files
from swarmdeck.probes.claude.sessions import SessionsProbe
from swarmdeck.probes.claude.transcript_fields import agent_id_in, reported_tokens, usage_figures

SID = "7777cccc-0000-4000-8000-000000000007"


def _subagents(tmp_path: Path) -> dict[str, dict]:
    sessions = SessionsProbe(tmp_path / "claude").refresh()
    assert len(sessions) == 1
    return {s.id: s.to_json() for s in sessions[0].subagents}


def _side_file(tree: ClaudeTree, agent_id: str, prompt: str) -> Path:
    side = Lines(SID, sidechain=True, agent_id=agent_id)
    side.prompt(prompt, 2)
    side.tool_use(f"toolu_{agent_id}", "Read", {"file_path": "/work/proj/a.py"}, 3)
    return tree.write_agent(side)


def test_compaction_and_suggestion_side_files_are_not_subagents(tmp_path: Path) -> None:
    """`agent-acompact-*` (context compaction), `agent-aprompt_suggestion-*` and
    `agent-aside_question-*` sit beside real subagents but are Claude Code's own helpers."""
    tree = ClaudeTree(tmp_path / "claude")
    main = Lines(SID)
    main.prompt("go", 0)
    main.agent("toolu_real", "Real work", "Do the real work.", 1)
    tree.write_main(main)
    real = Lines(SID, sidechain=True, agent_id="a4c1e0f2b3d4e5f60")
    real.prompt("Do the real work.", 2)
    real.tool_use("toolu_rw", "Bash", {"command": "make"}, 3)
    tree.write_agent(real)
    for helper in ("acompact-7aad72", "aprompt_suggestion-23e3e5", "aside_question-94d26433"):
        _side_file(tree, helper, "Summarise the conversation so far.")
    flat = Lines(SID, sidechain=True, agent_id="acompact-33eb9bdd")
    flat.prompt("Summarise the conversation so far.", 2)
    tree.write_flat_agent(flat)

    subs = _subagents(tmp_path)
    assert list(subs) == ["a4c1e0f2b3d4e5f60"]
    assert subs["a4c1e0f2b3d4e5f60"]["status"] == "running"
    assert subs["a4c1e0f2b3d4e5f60"]["tool_in_flight"] == "Bash"


def test_notification_usage_written_as_tags_gives_tokens_and_calls(tmp_path: Path) -> None:
    """2.1.2xx notifications carry `<usage><total_tokens>N</total_tokens>…</usage>` and a
    `<result>`, and no `<output-file>`."""
    tree = ClaudeTree(tmp_path / "claude")
    main = Lines(SID)
    main.prompt("check keys in the background", 0)
    main.agent("toolu_01DJXg", "Check API keys availability", "Check the keys.", 1,
               background=True)
    main.async_launched("toolu_01DJXg", "ad284cdf380fde328", 2)
    note = (
        "<task-notification>\n<task-id>ad284cdf380fde328</task-id>\n"
        "<tool-use-id>toolu_01DJXg</tool-use-id>\n<status>completed</status>\n"
        '<summary>Agent "Check API keys availability" completed</summary>\n'
        "<result>Here is the exact output:\n\nOpenAI: True</result>\n"
        "<usage><total_tokens>7898</total_tokens><tool_uses>3</tool_uses>"
        "<duration_ms>8049</duration_ms></usage>\n</task-notification>\n"
        "Full transcript available at: /tmp/claude-0/tasks/ad284cdf380fde328.output"
    )
    main.raw({"type": "queue-operation", "operation": "enqueue", "timestamp": iso(40),
              "sessionId": SID, "content": note})
    main.prompt(note, 41, origin={"kind": "task-notification"}, promptSource="system")
    tree.write_main(main)

    sub = _subagents(tmp_path)["ad284cdf380fde328"]
    assert sub["status"] == "completed"
    assert sub["tokens"] == 7898
    assert sub["tool_calls"] == 3


def test_foreground_reports_with_subagent_tokens_in_one_assistant_line(tmp_path: Path) -> None:
    """Two Agent calls in one assistant line, results whose toolUseResult is only
    `{agentId, status}` and whose footer says `subagent_tokens`, linked by meta.json."""
    tree = ClaudeTree(tmp_path / "claude")
    main = Lines(SID)
    main.prompt("compare the web and jobs modules", 0)
    line = main.agent("toolu_sc_col1", "Survey the web module", "Survey src/web.", 8)
    line["message"]["content"].insert(0, {"type": "text", "text": "Two agents, one each."})
    line["message"]["content"].append(
        {"type": "tool_use", "id": "toolu_sc_col2", "name": "Agent",
         "input": {"description": "Survey the jobs module", "subagent_type": "general-purpose",
                   "prompt": "Survey src/jobs."}}
    )
    for n, agent in ((1, "showcol1"), (2, "showcol2")):
        footer = (
            f"agentId: {agent} (use SendMessage with to: '{agent}' to continue this agent)\n"
            f"<usage>subagent_tokens: {1200 * n}\ntool_uses: {n}\nduration_ms: 4200</usage>"
        )
        main.result(f"toolu_sc_col{n}",
                    [{"type": "text", "text": "Report."}, {"type": "text", "text": footer}],
                    9 + n, tool_use_result={"agentId": agent, "status": "completed"})
    main.text("Both modules are surveyed.", 12)
    tree.write_main(main)
    for n, agent in ((1, "showcol1"), (2, "showcol2")):
        side = Lines(SID, sidechain=True, agent_id=agent)
        side.prompt(f"A reworded prompt {n}.", 8.5)
        side.text("Report.", 9)
        tree.write_agent(side, meta={"agentType": "general-purpose",
                                     "description": f"survey {n}",
                                     "toolUseId": f"toolu_sc_col{n}"})

    subs = _subagents(tmp_path)
    assert sorted(subs) == ["showcol1", "showcol2"]
    assert subs["showcol1"]["status"] == subs["showcol2"]["status"] == "completed"
    assert subs["showcol1"]["tokens"] == 1200
    assert subs["showcol2"]["tokens"] == 2400
    assert subs["showcol2"]["description"] == "Survey the jobs module"


def test_killed_agent_notice_without_tool_use_id_delivered_as_a_user_turn(
    tmp_path: Path,
) -> None:
    """A stopped agent's notice names only its task id and adds a `<note>`."""
    tree = ClaudeTree(tmp_path / "claude")
    main = Lines(SID)
    main.prompt("go", 0)
    main.agent("toolu_map", "Map current unread", "Map it.", 1, background=True)
    main.async_launched("toolu_map", "a28e47ea552aa4a31", 2)
    note = "\n".join([
        "<task-notification>",
        "<task-id>a28e47ea552aa4a31</task-id>",
        "<status>killed</status>",
        '<summary>Agent "Map current unread" was stopped by user</summary>',
        "<note>A task-notification fires each time this agent stops…</note>",
        "</task-notification>",
    ])
    main.user_blocks([{"type": "text", "text": note}], 30)
    tree.write_main(main)
    assert _subagents(tmp_path)["a28e47ea552aa4a31"]["status"] == "interrupted"


def test_old_result_line_names_its_agent_at_the_top_level(tmp_path: Path) -> None:
    """2.0.x: the Task result line carries `agentId` beside `message`, `is_error: null` in the
    block and an unrelated toolUseResult; the agent's flat file starts with an assistant line,
    so no prompt links it."""
    tree = ClaudeTree(tmp_path / "claude")
    main = Lines(SID, version="2.0.46")
    main.prompt("research it", 0)
    main.agent("toolu_01JA2m", "Research data-border-color", "Research how it is used.", 1,
               name="Task")
    main.raw({
        "parentUuid": None, "isSidechain": False, "userType": "external", "cwd": "/work/proj",
        "sessionId": SID, "version": "2.0.46", "uuid": "u-result", "timestamp": iso(120),
        "isMeta": None, "type": "user",
        "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_01JA2m",
             "content": [{"type": "text", "text": "Perfect! Here is what I found."}],
             "is_error": None, "agentId": None}]},
        "toolUseResult": {"oldString": None, "newString": None, "replaceAll": None},
        "agentId": "e1c84ba5",
    })
    tree.write_main(main)
    side = Lines(SID, sidechain=True, agent_id="e1c84ba5", version="2.0.46")
    side.text("I'll research how it is used.", 5, parent=None)
    side.tool_use("toolu_01BWgw", "Grep", {"pattern": "data-border-color"}, 6)
    side.result("toolu_01BWgw", "a.css", 7)
    side.text("Perfect! Here is what I found.", 110)
    tree.write_flat_agent(side)

    subs = _subagents(tmp_path)
    assert list(subs) == ["e1c84ba5"]
    assert subs["e1c84ba5"]["status"] == "completed"
    assert subs["e1c84ba5"]["tool_calls"] == 1
    assert subs["e1c84ba5"]["type"] == "general-purpose"


def test_workflow_agents_are_listed_and_the_workflow_call_is_no_dispatch(
    tmp_path: Path,
) -> None:
    """A Workflow run keeps its agents in `subagents/workflows/<run>/` with a journal beside
    them; their lines name the session as `<sid>#agent-<id>`."""
    tree = ClaudeTree(tmp_path / "claude")
    main = Lines(SID)
    main.prompt("Run the docs sweep workflow.", 0)
    main.tool_use("toolu_wfsp01", "Workflow", {"scriptPath": "/home/u/sweep.workflow.js"}, 1)
    main.result("toolu_wfsp01", "Workflow launched in background. Task ID: task_sp01", 1,
                tool_use_result={"isAsync": True, "status": "async_launched",
                                 "runId": "wf_sp01", "taskId": "task_sp01"})
    tree.write_main(main)
    folder = tree.project_dir / SID / "subagents" / "workflows" / "wf_sp01"
    folder.mkdir(parents=True)
    step = Lines(f"{SID}#agent-agsp0001", sidechain=True, agent_id="agsp0001")
    step.prompt("Sweep docs batches a and b.", 2)
    step.text("Batch a and b swept.", 3)
    (folder / "agent-agsp0001.jsonl").write_text(step.dumps())
    (folder / "agent-agsp0001.meta.json").write_text('{\n  "agentType": "workflow-subagent"\n}')
    (folder / "journal.jsonl").write_text('{"type": "started", "runId": "wf_sp01"}\n')

    probe = SessionsProbe(tmp_path / "claude")
    session = probe.refresh()[0]
    subs = {s.id: s.to_json() for s in session.subagents}
    assert list(subs) == ["agsp0001"]
    assert subs["agsp0001"]["type"] == "workflow-subagent"
    assert subs["agsp0001"]["status"] == "completed"
    assert session.health.dispatches == 0


def test_line_kinds_that_carry_no_subagent_news_leave_statuses_alone(tmp_path: Path) -> None:
    """Snapshots, summaries, compact boundaries, attachments, progress of shells and hooks,
    titles, thinking blocks and meta messages around a background agent."""
    tree = ClaudeTree(tmp_path / "claude")
    main = Lines(SID)
    main.raw({"type": "file-history-snapshot", "messageId": "m0", "isSnapshotUpdate": False,
              "snapshot": {"messageId": "m0", "trackedFileBackups": {}, "timestamp": iso(0)}})
    main.raw({"type": "summary", "summary": "Earlier work", "leafUuid": "u-old"})
    main.prompt("<command-name>/clear</command-name>", 0, isMeta=True)
    main.prompt("review in the background", 0.5)
    line = main.agent("toolu_bgr", "Review the diff", "Review it.", 1, background=True)
    line["message"]["content"].insert(0, {"type": "thinking", "thinking": "…", "signature": "x"})
    main.async_launched("toolu_bgr", "a0f1e2d3c4b5a6978", 2)
    main.raw({"type": "attachment", "uuid": "att1", "parentUuid": None, "sessionId": SID,
              "timestamp": iso(3), "isSidechain": False,
              "attachment": {"type": "hook_additional_context", "content": ["swarmdeck: …"],
                             "hookName": "PreToolUse:Bash", "hookEvent": "PreToolUse",
                             "toolUseID": "toolu_b1"}})
    main.raw({"type": "progress", "uuid": "pr1", "sessionId": SID, "timestamp": iso(4),
              "toolUseID": "toolu_b1", "parentToolUseID": "toolu_b1",
              "data": {"type": "bash_progress", "output": "…", "elapsedTimeSeconds": 3}})
    main.raw({"type": "progress", "uuid": "pr2", "sessionId": SID, "timestamp": iso(4),
              "data": {"type": "hook_progress", "hookEvent": "PostToolUse"}})
    main.raw({"type": "system", "subtype": "compact_boundary", "uuid": "cb1", "sessionId": SID,
              "timestamp": iso(5), "isSidechain": False, "content": "Conversation compacted",
              "compactMetadata": {"trigger": "auto", "preTokens": 167000}})
    main.raw({"type": "system", "subtype": "turn_duration", "uuid": "td1", "sessionId": SID,
              "timestamp": iso(6), "durationMs": 5000, "isSidechain": False})
    for kind, key in (("ai-title", "aiTitle"), ("custom-title", "customTitle")):
        main.raw({"type": kind, key: f"{kind} of it", "sessionId": SID})
    main.raw({"type": "agent-name", "agentName": "reviewer", "sessionId": SID})
    main.raw({"type": "last-prompt", "lastPrompt": "review", "sessionId": SID})
    main.raw({"type": "pr-link", "prNumber": 7, "prUrl": "https://example.invalid/7",
              "sessionId": SID, "timestamp": iso(7)})
    main.raw({"type": "queue-operation", "operation": "popAll", "sessionId": SID,
              "timestamp": iso(8), "content": [{"type": "text", "text": "and tests too"}]})
    path = tree.write_main(main)
    probe = SessionsProbe(tmp_path / "claude")
    session = probe.refresh()[0]
    assert session.title == "custom-title of it"
    assert [(s.id, s.status) for s in session.subagents] == [("a0f1e2d3c4b5a6978", "running")]

    done = Lines(SID)
    done.notification("a0f1e2d3c4b5a6978", "toolu_bgr", "completed", 60)
    with open(path, "a") as handle:
        handle.write(done.dumps())
    assert probe.refresh()[0].subagents[0].status == "completed"


def test_pid_file_with_a_date_process_start_and_newer_fields_is_live(tmp_path: Path) -> None:
    """macOS writes `procStart` as a date and newer versions add fields we do not use."""
    tree = ClaudeTree(tmp_path / "claude")
    tree.write_pid_file(
        os.getpid(), SID, procStart="Thu Sep 10 08:31:58 2026", pidDomain="darwin",
        entrypoint="claude-vscode", name="proj-32", nameSource="derived", status="waiting",
        waitingFor="input needed", updatedAt=1789029119710, statusUpdatedAt=1789029119710,
        messagingSocketPath="/tmp/cc-socks/1.sock", peerProtocol=1,
    )
    live = pid_files(tmp_path / "claude").live
    assert live[SID].status == "waiting" and live[SID].name == "proj-32"


@pytest.mark.parametrize("flagged", [True, False])
def test_a_result_line_in_an_agent_file_names_the_caller_not_the_agent_called(
    tmp_path: Path, flagged: bool
) -> None:
    """Every line of an agent's file carries that agent's own `agentId`, its nested dispatch's
    result line included: that id is not the nested agent's, whether or not the lines say
    `isSidechain` (an agent's file is one by where it lies)."""
    tree = ClaudeTree(tmp_path / "claude")
    main = Lines(SID)
    main.prompt("go", 0)
    main.agent("toolu_outer", "Outer", "Outer work.", 1)
    tree.write_main(main)
    outer = Lines(SID, sidechain=flagged, agent_id="aout")
    outer.prompt("Outer work.", 2)
    outer.agent("toolu_inner", "Inner", "Inner work.", 3, subagent_type="Plan")
    outer.result("toolu_inner", [{"type": "text", "text": "Planned."}], 9)
    tree.write_agent(outer)
    inner = Lines(SID, sidechain=True, agent_id="ainn")
    inner.prompt("Inner work.", 4)
    inner.text("Planned.", 8)
    tree.write_agent(inner, nested_in="aout")
    subs = _subagents(tmp_path)
    assert sorted(subs) == ["ainn", "aout"]
    assert subs["ainn"]["parent_id"] == "aout"
    assert subs["ainn"]["status"] == "completed"


def test_inline_sidechain_lines_carrying_their_agent_id_keep_their_nesting(
    tmp_path: Path,
) -> None:
    """2.0.x transcripts with sidechain lines inline (each naming its agent): a sidechain's
    own nested Task result names the sidechain agent, not the nested one."""
    tree = ClaudeTree(tmp_path / "claude")
    main = Lines(SID, version="2.0.46")
    main.prompt("go", 0)
    main.agent("toolu_top", "Top", "Top work.", 1, name="Task")
    side = main.prompt("Top work.", 2, sidechain=True, parent=None, agentId="e1c84ba5")
    main.agent("toolu_nested", "Nested", "Nested work.", 3, name="Task", sidechain=True,
               parent=side["uuid"], agentId="e1c84ba5")
    main.result("toolu_nested", "Nested done.", 9, sidechain=True, agentId="e1c84ba5")
    tree.write_main(main)
    subs = _subagents(tmp_path)
    assert sorted(subs) == ["toolu_nested", "toolu_top"]
    assert subs["toolu_nested"]["status"] == "completed"
    assert subs["toolu_nested"]["parent_id"] == "toolu_top"
    assert subs["toolu_top"]["status"] == "running"


def test_usage_footers_in_every_form_seen() -> None:
    forms = {
        "<usage>total_tokens: 37577\ntool_uses: 4\nduration_ms: 155647</usage>": (37577, 4),
        "<usage>total_tokens: 42135;tool_uses: 12;duration_ms: 146084</usage>": (42135, 12),
        "<usage>subagent_tokens: 1200\ntool_uses: 1\nduration_ms: 4200</usage>": (1200, 1),
        "<usage><total_tokens>7898</total_tokens><tool_uses>1</tool_uses></usage>": (7898, 1),
        "the model failed\n<usage>total_tokens: 0\ntool_uses: 0\nduration_ms: 547</usage>": (0, 0),
        "no footer at all": (None, None),
        "it said <usage>total_tokens: 5\ntool_uses: 1</usage>\n"
        "<usage>total_tokens: 900\ntool_uses: 9</usage>": (900, 9),
    }
    for text, (tokens, uses) in forms.items():
        figures = usage_figures(text)
        assert (reported_tokens(figures), figures.get("tool_uses")) == (tokens, uses), text
    assert agent_id_in("…needed)agentId: a06cdaac5c7b9151c (for resuming)") == "a06cdaac5c7b9151c"
    quoting = "The helper ended with agentId: a1nner (use SendMessage…)\nagentId: a0uter (use …)"
    assert agent_id_in(quoting) == "a0uter"


def test_teammate_and_remote_launches_run_until_they_report(tmp_path: Path) -> None:
    """A teammate's result names it in snake case (`agent_id: "rev@core"`), a remote launch
    (`remote_launched`) runs elsewhere: neither result is the agent's end."""
    tree = ClaudeTree(tmp_path / "claude")
    main = Lines(SID)
    main.prompt("review with the team", 0)
    call = main.agent("toolu_team", "Review the parser", "Review the parser.", 1,
                      subagent_type="reviewer")
    call["message"]["content"][0]["input"].update({"name": "rev", "team_name": "core"})
    main.result("toolu_team", "Spawned successfully.\nagent_id: rev@core\nname: rev", 2,
                tool_use_result={"status": "teammate_spawned", "prompt": "Review the parser.",
                                 "teammate_id": "rev@core", "agent_id": "rev@core",
                                 "agent_type": "reviewer", "name": "rev", "team_name": "core",
                                 "is_splitpane": False, "plan_mode_required": False})
    main.agent("toolu_remote", "Run the long suite", "Run it remotely.", 3)
    main.result("toolu_remote", "Remote agent launched.", 4,
                tool_use_result={"status": "remote_launched", "taskId": "r1"})
    tree.write_main(main)
    subs = _subagents(tmp_path)
    assert sorted(subs) == ["rev@core", "toolu_remote"]
    assert subs["rev@core"]["status"] == "running" and subs["rev@core"]["background"]
    assert subs["rev@core"]["type"] == "reviewer"
    assert subs["toolu_remote"]["status"] == "running"
    assert agent_id_in("Spawned successfully.\nagent_id: researcher@git-integration.") == (
        "researcher@git-integration"
    )
