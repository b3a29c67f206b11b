"""SessionStart: what a restart or a compaction loses, put back into the agent's context."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

from claude_lines import ClaudeTree, Lines, hook_payload
from ledger_rows import insert_job
from swarmdeck.hooks.payload import HookInput
from swarmdeck.hooks.record import record_event
from swarmdeck.hooks.session_start import oom_summary
from swarmdeck.probes.kernel import KernelLog, OomKill
from swarmdeck.state import StateStore

SID = "aaaa1111-0000-4000-8000-000000000009"


def _session_with_running_agents(tmp_path: Path) -> Path:
    tree = ClaudeTree(tmp_path / "claude")
    main = Lines(SID)
    main.prompt("go", 0)
    main.agent("toolu_fg", "Map the API", "Map it.", 1, subagent_type="Explore")
    main.agent("toolu_bg", "Review the diff", "Review.", 2, subagent_type="code-reviewer")
    main.async_launched("toolu_bg", "abg", 3)
    main.agent("toolu_done", "Done already", "Done.", 2)
    main.foreground_done("toolu_done", "adone", 9)
    return tree.write_main(main)


def _start(run_hook, tmp_path: Path, cwd: Path, transcript: Path | None, source: str = "compact"):
    payload = hook_payload(
        "SessionStart",
        session_id=SID,
        source=source,
        cwd=str(cwd),
        transcript_path=str(transcript or tmp_path / "missing.jsonl"),
        model="claude-opus-4-6",
    )
    done = run_hook("session-start", payload)
    assert done.returncode == 0, done.stderr
    return done


def test_compaction_gets_running_subagents_jobs_changes_and_alerts(
    run_hook, tmp_path: Path
) -> None:
    transcript = _session_with_running_agents(tmp_path)
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "notes.md").write_text("unfinished\n")
    store = StateStore.open_default()
    with store.transaction() as conn:
        insert_job(conn, label="pytest", argv=["pytest"], cwd=str(repo), booked=2 * 1024**3,
                   cap=None, started_at=1000.0)
        conn.execute(
            "INSERT INTO alerts (key, level, source, message) VALUES"
            " ('slice-full', 'warn', 'runner', 'the slice was full twice')"
        )
    store.close()
    done = _start(run_hook, tmp_path, repo, transcript)
    context = done.context
    assert done.answer["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert "Subagents still running (2)" in context
    assert '"Map the API" (Explore' in context
    assert '"Review the diff" (code-reviewer' in context and "background" in context
    assert "Done already" not in context
    assert "Caged jobs still active (1): #1 pytest (running" in context
    assert "booked 2G" in context
    assert f"Uncommitted changes in {repo}: 1 file (?? notes.md)" in context
    assert "Open alerts (1): [warn] the slice was full twice" in context


def test_hook_events_add_subagents_the_transcript_does_not_show_yet(
    run_hook, tmp_path: Path
) -> None:
    start = hook_payload("SubagentStart", session_id=SID, agent_id="afresh", agent_type="Plan")
    run_hook("subagent-start", start)
    gone = hook_payload("SubagentStart", session_id=SID, agent_id="agone", agent_type="Plan")
    run_hook("subagent-start", gone)
    run_hook("subagent-stop", {**gone, "hook_event_name": "SubagentStop"})
    done = _start(run_hook, tmp_path, tmp_path, None, source="resume")
    assert "Subagents still running (1): afresh (Plan" in done.context
    assert "agone" not in done.context


def test_a_dispatch_with_no_transcript_yet_and_its_hook_record_are_said_once(
    run_hook, tmp_path: Path
) -> None:
    tree = ClaudeTree(tmp_path / "claude")
    main = Lines(SID)
    main.prompt("go", 0)
    main.agent("toolu_fg", "Map the API", "Map it.", 1, subagent_type="Explore")
    transcript = tree.write_main(main)
    run_hook("subagent-start", hook_payload("SubagentStart", session_id=SID, agent_id="amap",
                                            agent_type="Explore"))
    done = _start(run_hook, tmp_path, tmp_path, transcript)
    assert "Subagents still running (1): \"Map the API\" (Explore" in done.context
    assert "amap" not in done.context


def test_resume_does_not_list_the_previous_process_agents_as_running(
    run_hook, tmp_path: Path
) -> None:
    """`claude --resume`: the transcript and the hook events still show the agents the last
    process started; the live process started after them, so they are gone."""
    transcript = _session_with_running_agents(tmp_path)
    now = time.time()
    for agent, at in (("aghost", now - 3600), ("afresh", now + 5)):
        payload = hook_payload("SubagentStart", session_id=SID, agent_id=agent,
                               agent_type="Plan")
        record_event(HookInput("SubagentStart", payload), now=at)
    ClaudeTree(tmp_path / "claude").write_pid_file(os.getpid(), SID,
                                                   startedAt=int(now * 1000))
    done = _start(run_hook, tmp_path, tmp_path, transcript, source="resume")
    assert "Subagents still running (1): afresh (Plan" in done.context
    for ghost in ("aghost", "Map the API", "Review the diff"):
        assert ghost not in done.context


def test_quiet_start_says_nothing_runs_and_restates_the_rule(run_hook, tmp_path: Path) -> None:
    done = _start(run_hook, tmp_path, tmp_path, None, source="startup")
    context = done.context
    assert "at session startup" in context
    assert "Subagents still running" not in context
    assert "Caged jobs" not in context
    assert "Uncommitted" not in context
    assert "Open alerts" not in context
    assert "swarmdeck run -- CMD" in context


def test_missing_cwd_and_transcript_fields_still_answer(run_hook) -> None:
    done = run_hook("session-start", json.dumps({"hook_event_name": "SessionStart"}))
    assert done.returncode == 0


def _kill(scope: str, process: str, memcg: str = "/swarmdeck/job-1") -> OomKill:
    return OomKill(at=1.0, since_boot=1.0, pid=42, process=process, uid=0, scope=scope,
                   constraint="CONSTRAINT_MEMCG" if scope == "cgroup" else "CONSTRAINT_NONE",
                   oom_memcg=memcg, task_memcg=memcg, anon_rss=1024)


def test_oom_summary_counts_machine_and_cage_kills_apart() -> None:
    log = KernelLog(state="read", source="/dev/kmsg",
                    oom_kills=[_kill("machine", "cc1plus"), _kill("cgroup", "pytest"),
                               _kill("cgroup", "pytest")])
    text = oom_summary(log, "/swarmdeck")
    assert text == ("OOM kills in the last 12 h: 1 whole-machine, 2 inside this ledger's cages"
                    " (killed: cc1plus, pytest)")


def test_oom_summary_counts_only_the_cages_of_this_ledgers_slice() -> None:
    """Other users' slices (one whose name merely starts like ours too) are not this ledger's."""
    log = KernelLog(state="read", source="/dev/kmsg", oom_kills=[
        _kill("cgroup", "pytest"),
        _kill("cgroup", "cc1plus", "/swarmdeck-ann/job-3"),
        _kill("cgroup", "node", "/user.slice/user-1001.slice/session-4.scope"),
    ])
    assert oom_summary(log, "/swarmdeck") == (
        "OOM kills in the last 12 h: 0 whole-machine, 1 inside this ledger's cages"
        " (killed: pytest)")
    assert oom_summary(log, None) is None
    assert oom_summary(KernelLog(state="read", source="/dev/kmsg"), "/swarmdeck") is None


def test_session_start_counts_the_kills_in_the_slice_of_its_own_ledger(
    isolated_home: Path, tmp_path: Path, v1_cgroups
) -> None:
    """A real slice of this test's own, named in the config; the kernel log is one of the
    test's own (tests/kernel_log.py), in the kernel's words, with a kill in another slice too."""
    from kernel_log import FakeKernelLog
    from swarmdeck.hooks.session_start import oom_line

    mine, theirs = v1_cgroups(), v1_cgroups()
    (isolated_home / "config.toml").write_text(f'[memory]\nslice = "{mine}"\n')
    log = FakeKernelLog(tmp_path)
    for cage, task, pid in ((mine, "pytest", 4242), (theirs, "cc1plus", 4343)):
        log.log_kmsg(
            "oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0,"
            f"oom_memcg=/{cage.name}/job-1,task_memcg=/{cage.name}/job-1,task={task},"
            f"pid={pid},uid=0")
        log.log_kmsg(f"Memory cgroup out of memory: Killed process {pid} ({task})"
                     " total-vm:1000kB, anon-rss:900kB, file-rss:0kB, shmem-rss:0kB, UID:0")
    store = StateStore.open_default()
    try:
        line = oom_line(time.time(), store, kmsg=log.kmsg, use_dmesg=False)
    finally:
        store.close()
    assert line == ("OOM kills in the last 12 h: 0 whole-machine, 1 inside this ledger's cages"
                    " (killed: pytest)")
