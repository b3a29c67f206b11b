"""Each rule fires on a real scene and stays quiet on its healthy twin.

Sessions are real transcript files with a pid file naming a real process; jobs are ledger rows
whose process this test started; hook events are rows of a real state file. Thresholds are tiny,
set through the config. Transcript times are at claude_lines.BASE, so `now` is given from it.
"""

from __future__ import annotations

import json
import os
import sys
import time

from scene_kit import SID, insert_hook_event, insert_job, write_watchdog_config

from busy_job import busy_job
from claude_lines import BASE, Lines, age
from ledger_rows import add_job
from peer_figures import peer_host_object
from swarmdeck.actions.workdir_claims import claim_directory
from swarmdeck.config import load_config
from swarmdeck.hook_events import record_line, spool_path
from swarmdeck.probes.host import local_host_name
from swarmdeck.probes.peer_cache import PeerReading, reading_of
from swarmdeck.probes.usage import UsageTracker
from swarmdeck.snapshot import take_snapshot
from swarmdeck.watchdog import rules
from swarmdeck.watchdog.history import History
from swarmdeck.watchdog.scene import SceneReader


def drafts(rule, config, store, now, *, usage=None, peers=None, history=None):
    snapshot = take_snapshot(config, store, usage=usage)
    if peers is not None:
        snapshot.peers = peers
    scene = SceneReader().read(snapshot, store, now)
    return rule(scene, history or History(5), config, now)


def main_lines() -> Lines:
    lines = Lines(SID)
    lines.prompt("go", 0)
    return lines


# ---------------------------------------------------------------- long tool call


def test_a_tool_call_running_past_the_limit_is_found(isolated_home, store, tree, live_session):
    config = write_watchdog_config(isolated_home, tool_call_max=5)
    lines = main_lines()
    lines.tool_use("toolu_1", "Bash", {"command": "make -j8 all"}, 1)
    tree.write_main(lines)
    found = drafts(rules.long_tool_call, config, store, BASE + 60)
    assert [d.key for d in found] == [f"long_tool_call:{SID}:toolu_1"]
    assert found[0].session_id == SID


def test_a_bash_call_waiting_for_the_persons_permission_is_not_long_running(
    isolated_home, store, tree, live_session
):
    """Claude Code asks the person before the call runs: a minute at the prompt is not a
    minute of running, and the finding would tell the agent to run it detached."""
    config = write_watchdog_config(isolated_home, tool_call_max=5)
    lines = main_lines()
    lines.tool_use("toolu_1", "Bash", {"command": "make -j8 all"}, 1)
    tree.write_main(lines)
    pid_file = tree.root / "sessions" / f"{live_session.pid}.json"
    data = json.loads(pid_file.read_text())
    data.update(status="waiting", waitingFor="permission to run Bash: make -j8 all",
                updatedAt=int((BASE + 2) * 1000))
    pid_file.write_text(json.dumps(data))
    assert drafts(rules.long_tool_call, config, store, BASE + 60) == []


def test_a_tool_call_that_returned_is_not_found(isolated_home, store, tree, live_session):
    config = write_watchdog_config(isolated_home, tool_call_max=5)
    lines = main_lines()
    lines.tool_use("toolu_1", "Bash", {"command": "make -j8 all"}, 1)
    lines.result("toolu_1", "ok", 50)
    tree.write_main(lines)
    assert drafts(rules.long_tool_call, config, store, BASE + 60) == []


# ---------------------------------------------------------------- idle with work in flight


def test_a_silent_session_with_a_running_subagent_is_found(
    isolated_home, store, tree, live_session
):
    config = write_watchdog_config(isolated_home, idle_max=30)
    lines = main_lines()
    lines.agent("toolu_a", "search", "find it", 1)
    tree.write_main(lines)
    found = drafts(rules.idle_with_work_in_flight, config, store, BASE + 120)
    assert [d.key for d in found] == [f"idle_with_work_in_flight:{SID}"]
    assert found[0].message.endswith(" with 1 thing in flight (a subagent)"), found[0].message


def test_a_subagent_known_from_its_file_and_its_hook_events_is_one_thing(
    isolated_home, store, tree, live_session
):
    config = write_watchdog_config(isolated_home, idle_max=30)
    lines = main_lines()
    lines.agent("toolu_a", "search", "find it", 1)
    tree.write_main(lines)
    agent = Lines(SID, sidechain=True, agent_id="a1")
    agent.prompt("find it", 2)
    agent.tool_use("toolu_in", "Grep", {"pattern": "needle"}, 3)
    tree.write_agent(agent, meta={"agentType": "general-purpose", "toolUseId": "toolu_a"})
    insert_hook_event(store, "SubagentStart", time.time(), agent_id="a1",
                      agent_type="general-purpose")
    [found] = drafts(rules.idle_with_work_in_flight, config, store, BASE + 120)
    assert found.message.endswith(" with 1 thing in flight (a subagent)"), found.message


def test_a_subagent_whose_own_file_is_not_written_yet_is_one_thing(
    isolated_home, store, tree, live_session
):
    config = write_watchdog_config(isolated_home, idle_max=30)
    lines = main_lines()
    lines.agent("toolu_a", "search", "find it", 1)
    tree.write_main(lines)
    insert_hook_event(store, "SubagentStart", time.time(), agent_id="a1",
                      agent_type="general-purpose")
    [found] = drafts(rules.idle_with_work_in_flight, config, store, BASE + 120)
    assert found.message.endswith(" with 1 thing in flight (a subagent)"), found.message


def test_a_subagent_the_transcripts_do_not_show_yet_is_counted_from_its_hook_events(
    isolated_home, store, tree, live_session
):
    config = write_watchdog_config(isolated_home, idle_max=30)
    lines = main_lines()
    lines.agent("toolu_a", "search", "find it", 1)
    tree.write_main(lines)
    for agent_id in ("a1", "a2"):
        insert_hook_event(store, "SubagentStart", time.time(), agent_id=agent_id,
                          agent_type="general-purpose")
    [found] = drafts(rules.idle_with_work_in_flight, config, store, BASE + 120)
    assert found.message.endswith(" with 2 things in flight (2 subagents)"), found.message


def test_a_bash_call_beside_a_running_subagent_is_a_second_thing(
    isolated_home, store, tree, live_session
):
    config = write_watchdog_config(isolated_home, idle_max=30)
    lines = main_lines()
    lines.agent("toolu_a", "search", "find it", 1)
    lines.tool_use("toolu_b", "Bash", {"command": "make -j8 all"}, 2)
    tree.write_main(lines)
    [found] = drafts(rules.idle_with_work_in_flight, config, store, BASE + 120)
    assert found.message.endswith(" with 2 things in flight (a subagent, a tool call)"), (
        found.message)


def test_idle_with_one_thing_in_flight_says_one_thing(isolated_home, store, tree, live_session):
    config = write_watchdog_config(isolated_home, idle_max=30)
    lines = main_lines()
    lines.tool_use("toolu_1", "Bash", {"command": "make -j8 all"}, 2)
    tree.write_main(lines)
    [found] = drafts(rules.idle_with_work_in_flight, config, store, BASE + 120)
    assert found.message.endswith(" with 1 thing in flight (a tool call)"), found.message


def test_a_silent_session_with_nothing_in_flight_is_not_found(
    isolated_home, store, tree, live_session
):
    config = write_watchdog_config(isolated_home, idle_max=30)
    lines = main_lines()
    lines.text("done, nothing left", 1)
    tree.write_main(lines)
    assert drafts(rules.idle_with_work_in_flight, config, store, BASE + 120) == []


# ---------------------------------------------------------------- wait loop without a timeout


def test_a_running_wait_loop_without_timeout_is_found(isolated_home, store, tree, live_session):
    config = write_watchdog_config(isolated_home)
    lines = main_lines()
    lines.tool_use("toolu_w", "Bash", {"command": "while ! test -f done; do sleep 5; done"}, 1)
    tree.write_main(lines)
    found = drafts(rules.wait_loop_without_timeout, config, store, BASE + 10)
    assert [d.key for d in found] == [f"wait_loop_without_timeout:{SID}:toolu_w"]


def test_a_wait_loop_under_timeout_is_not_found(isolated_home, store, tree, live_session):
    config = write_watchdog_config(isolated_home)
    lines = main_lines()
    command = "timeout 600 sh -c 'while ! test -f done; do sleep 5; done'"
    lines.tool_use("toolu_w", "Bash", {"command": command}, 1)
    tree.write_main(lines)
    assert drafts(rules.wait_loop_without_timeout, config, store, BASE + 10) == []


# ---------------------------------------------------------------- repeated unchanged output


def _polls(outputs: list[str]) -> Lines:
    lines = main_lines()
    for n, output in enumerate(outputs):
        lines.tool_use(f"toolu_p{n}", "Bash", {"command": "squeue -u me"}, 1 + 2 * n)
        lines.result(f"toolu_p{n}", output, 2 + 2 * n)
    return lines


def test_the_same_command_with_the_same_output_three_times_is_found(
    isolated_home, store, tree, live_session
):
    config = write_watchdog_config(isolated_home, repeat_max=3)
    tree.write_main(_polls(["JOBID 1 R", "JOBID 1 R", "JOBID 1 R"]))
    found = drafts(rules.repeated_unchanged_output, config, store, BASE + 10)
    assert [d.rule for d in found] == ["repeated_unchanged_output"]
    assert "squeue" in found[0].subject


def test_the_same_command_with_changing_output_is_not_found(
    isolated_home, store, tree, live_session
):
    config = write_watchdog_config(isolated_home, repeat_max=3)
    tree.write_main(_polls(["JOBID 1 PD", "JOBID 1 R", "JOBID 1 CG"]))
    assert drafts(rules.repeated_unchanged_output, config, store, BASE + 10) == []


# ---------------------------------------------------------------- output not growing


def test_a_job_whose_output_stopped_growing_is_found(isolated_home, store, processes):
    config = write_watchdog_config(isolated_home, output_stall=30)
    job = processes("sleep", "300")
    output = isolated_home / "job.out"
    output.write_text("epoch 1\n")
    age(output, 120)
    job_id = insert_job(store, job.pid, output_path=str(output), started_at=time.time() - 200)
    found = drafts(rules.output_not_growing, config, store, time.time())
    assert [d.key for d in found] == [f"output_not_growing:job{job_id}"]
    assert found[0].pid == job.pid


def test_a_job_whose_output_grows_is_not_found(isolated_home, store, processes):
    config = write_watchdog_config(isolated_home, output_stall=30)
    job = processes("sleep", "300")
    output = isolated_home / "job.out"
    output.write_text("epoch 1\n")
    insert_job(store, job.pid, output_path=str(output), started_at=time.time() - 200)
    assert drafts(rules.output_not_growing, config, store, time.time()) == []


def test_a_cluster_job_whose_output_stopped_growing_is_found_by_its_ledger_row(
    isolated_home, store
):
    config = write_watchdog_config(isolated_home, output_stall=30)
    output = isolated_home / "slurm-job.out"
    output.write_text("epoch 1\n")
    age(output, 120)
    job_id = add_job(store, label="on the cluster", host="node7", slurm_job_id=4242,
                     output_path=str(output), started_at=time.time() - 200)
    found = drafts(rules.output_not_growing, config, store, time.time())
    assert [(d.key, d.job_id, d.host) for d in found] == [
        (f"output_not_growing:job{job_id}", job_id, "node7")
    ]


def test_a_cluster_job_whose_output_grows_is_not_found(isolated_home, store):
    config = write_watchdog_config(isolated_home, output_stall=30)
    output = isolated_home / "slurm-job.out"
    output.write_text("epoch 1\n")
    add_job(store, label="on the cluster", host="node7", slurm_job_id=4242,
            output_path=str(output), started_at=time.time() - 200)
    assert drafts(rules.output_not_growing, config, store, time.time()) == []


# ---------------------------------------------------------------- round ended, nothing behind


def test_a_round_ended_with_nothing_in_the_background_is_found(
    isolated_home, store, tree, live_session
):
    config = write_watchdog_config(isolated_home)
    tree.write_main(main_lines())
    insert_hook_event(store, "Stop", time.time(), background_tasks=[])
    found = drafts(rules.round_ended_without_background, config, store, time.time())
    assert [d.key for d in found] == [f"round_ended_without_background:{SID}"]
    assert "watch --wake" in found[0].advice


def test_a_round_ended_with_a_background_task_is_not_found(
    isolated_home, store, tree, live_session
):
    config = write_watchdog_config(isolated_home)
    tree.write_main(main_lines())
    insert_hook_event(
        store, "Stop", time.time(),
        background_tasks=[{"id": "a1", "type": "subagent", "status": "running"}],
    )
    assert drafts(rules.round_ended_without_background, config, store, time.time()) == []


def test_a_round_taken_up_again_after_its_stop_is_not_found(
    isolated_home, store, tree, live_session
):
    config = write_watchdog_config(isolated_home)
    stopped = time.time() - 30
    lines = main_lines()
    lines.prompt("next, please", stopped + 10 - BASE)
    tree.write_main(lines)
    insert_hook_event(store, "Stop", stopped, background_tasks=[])
    assert drafts(rules.round_ended_without_background, config, store, time.time()) == []


def test_a_round_taken_up_again_by_a_light_bash_call_still_in_the_hook_spool_is_not_found(
    isolated_home, store, tree, live_session
):
    config = write_watchdog_config(isolated_home)
    stopped = time.time() - 30
    tree.write_main(main_lines())
    insert_hook_event(store, "Stop", stopped, background_tasks=[])
    call = {"hook_event_name": "PreToolUse", "session_id": SID, "tool_name": "Bash",
            "tool_input": {"command": "ls"}}
    spool = os.open(spool_path(str(store.path)), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.write(spool, record_line(json.dumps(call).encode(), stopped + 10))
    os.close(spool)
    assert drafts(rules.round_ended_without_background, config, store, time.time()) == []


# ---------------------------------------------------------------- heavy without swarmdeck run


def test_a_heavy_command_run_outside_the_cage_is_found(isolated_home, store):
    config = write_watchdog_config(isolated_home)
    insert_hook_event(store, "PostToolUse", time.time(), tool_name="Bash",
                      tool_use_id="toolu_h", tool_input={"command": "make -j8 test"})
    found = drafts(rules.heavy_without_run, config, store, time.time())
    assert [d.key for d in found] == [f"heavy_without_run:{SID}:toolu_h"]


def test_a_heavy_script_is_read_in_the_calls_own_cwd(isolated_home, store):
    """`bash run_tests.sh` is read where the agent ran it, not in the watchdog's own cwd."""
    config = write_watchdog_config(isolated_home)
    project = isolated_home / "proj"
    project.mkdir()
    (project / "run_tests.sh").write_text("make -j8 test\n")
    insert_hook_event(store, "PostToolUse", time.time(), tool_name="Bash", cwd=str(project),
                      tool_use_id="toolu_s", tool_input={"command": "bash run_tests.sh"})
    found = drafts(rules.heavy_without_run, config, store, time.time())
    assert [d.key for d in found] == [f"heavy_without_run:{SID}:toolu_s"]


def test_a_heavy_command_under_swarmdeck_run_is_not_found(isolated_home, store):
    config = write_watchdog_config(isolated_home)
    insert_hook_event(store, "PostToolUse", time.time(), tool_name="Bash",
                      tool_use_id="toolu_h",
                      tool_input={"command": "swarmdeck run --cap 4G -- make -j8 test"})
    assert drafts(rules.heavy_without_run, config, store, time.time()) == []


# ---------------------------------------------------------------- resident memory over a line

HOLD = "import sys, time; buf = bytearray(48 << 20); buf[::4096] = b'x' * len(buf[::4096]);" \
    " print('ready', flush=True); time.sleep(300)"


def _holder(processes):
    import subprocess

    proc = processes(sys.executable, "-c", HOLD, stdout=subprocess.PIPE)
    assert proc.stdout.readline() == "ready\n"
    return proc


def test_a_supervised_process_over_the_resident_line_is_found(isolated_home, store, processes):
    config = write_watchdog_config(isolated_home, rss_line="20M")
    job = _holder(processes)
    insert_job(store, job.pid, started_at=time.time())
    found = drafts(rules.resident_over_line, config, store, time.time())
    assert [d.pid for d in found] == [job.pid]


def test_a_supervised_process_under_the_line_is_not_found(isolated_home, store, processes):
    config = write_watchdog_config(isolated_home, rss_line="1G")
    job = _holder(processes)
    insert_job(store, job.pid, started_at=time.time())
    assert drafts(rules.resident_over_line, config, store, time.time()) == []


# ---------------------------------------------------------------- threads underused


def _usage_looks(config, store, job_pid, threads):
    insert_job(store, job_pid, threads=threads, started_at=time.time() - 60)
    usage = UsageTracker()
    take_snapshot(config, store, usage=usage)
    time.sleep(0.5)
    return drafts(rules.threads_underused, config, store, time.time(), usage=usage)


def test_a_long_run_idling_on_its_declared_threads_is_found(isolated_home, store, processes):
    config = write_watchdog_config(isolated_home, long_run=1, thread_use_fraction=0.25)
    job = processes("sleep", "300")
    found = _usage_looks(config, store, job.pid, threads=8)
    assert [d.rule for d in found] == ["threads_underused"]


def test_a_threads_finding_shows_the_jobs_command_line_as_its_command(
    isolated_home, store, processes
):
    from swarmdeck.app.record_detail import finding_facts
    from swarmdeck.probes.store_rows import Finding

    config = write_watchdog_config(isolated_home, long_run=1, thread_use_fraction=0.25)
    job = processes("sleep", "300")
    [draft] = _usage_looks(config, store, job.pid, threads=8)
    finding = Finding(1, draft.key, draft.rule, draft.subject, draft.severity, draft.message,
                      0.0, 0.0, 1, None, advice=draft.advice)
    lines = [line.strip() for line in finding_facts(finding, 10.0, 200).plain.splitlines()]
    [command] = [line.split(None, 1)[1] for line in lines if line.startswith("command")]
    assert command == "sleep 300"
    [advice] = [line for line in lines if line.startswith("advice")]
    assert "--threads" in advice


def test_a_long_run_busy_on_its_threads_is_not_found(isolated_home, store):
    config = write_watchdog_config(isolated_home, long_run=1, thread_use_fraction=0.25)
    with busy_job(2) as job:
        assert _usage_looks(config, store, job.pid, threads=4) == []


# ---------------------------------------------------------------- job outlived its subagent


def _subagent_session(tree, finished: bool) -> None:
    lines = main_lines()
    lines.agent("toolu_a", "build it", "build", 1)
    if finished:
        lines.foreground_done("toolu_a", "agent7", 5)
    tree.write_main(lines)
    sub = Lines(SID, sidechain=True, agent_id="agent7")
    sub.prompt("build", 1)
    sub.tool_use("toolu_s", "Bash", {"command": "swarmdeck run -- make test"}, 2)
    tree.write_agent(sub)


def test_a_job_still_running_after_its_subagent_handed_back_is_found(
    isolated_home, store, tree, live_session, processes
):
    config = write_watchdog_config(isolated_home)
    _subagent_session(tree, finished=True)
    job = processes("sleep", "300")
    job_id = insert_job(store, job.pid, session_id=SID, agent_id="agent7",
                        started_at=time.time())
    found = drafts(rules.job_outlived_subagent, config, store, time.time())
    assert [d.key for d in found] == [f"job_outlived_subagent:job{job_id}"]


def test_a_job_of_a_subagent_still_working_is_not_found(
    isolated_home, store, tree, live_session, processes
):
    config = write_watchdog_config(isolated_home)
    _subagent_session(tree, finished=False)
    job = processes("sleep", "300")
    insert_job(store, job.pid, session_id=SID, agent_id="agent7", started_at=time.time())
    assert drafts(rules.job_outlived_subagent, config, store, time.time()) == []


# ---------------------------------------------------------------- scratch copy outlived


def _scratch(isolated_home, tree, processes, finished: bool):
    work = isolated_home / "work"
    (isolated_home / "config.toml").write_text(f'[locks]\nwork_root = "{work}"\n')
    _subagent_session(tree, finished=finished)
    copy = work / "copy-agent7"
    claim_directory(copy, session="agent7", purpose="scratch copy")
    processes("sleep", "300", cwd=copy)
    return load_config(), copy


def test_a_scratch_copy_in_use_after_its_subagent_handed_back_is_found(
    isolated_home, store, tree, live_session, processes
):
    config, copy = _scratch(isolated_home, tree, processes, finished=True)
    found = drafts(rules.scratch_copy_outlived_subagent, config, store, time.time())
    assert [d.key for d in found] == [f"scratch_copy_outlived_subagent:{copy}"]
    assert found[0].session_id == SID


def test_a_scratch_copy_of_a_subagent_still_working_is_not_found(
    isolated_home, store, tree, live_session, processes
):
    config, _ = _scratch(isolated_home, tree, processes, finished=False)
    assert drafts(rules.scratch_copy_outlived_subagent, config, store, time.time()) == []


# ---------------------------------------------------------------- queued while a peer fits


def _queued(store) -> int:
    with store.transaction() as conn:
        return int(conn.execute(
            "INSERT INTO jobs (label, host, argv, cwd, state, runner_pid, runner_start_ticks,"
            " booked) VALUES ('train', ?, '[\"python\", \"train.py\"]', '/w', 'queued', ?, ?, ?)",
            (local_host_name(), os.getpid(), _my_ticks(), 8 << 30),
        ).lastrowid)


def _my_ticks() -> int:
    from swarmdeck.probes.procs import own_identity

    return own_identity().start_ticks


def _peer(room: int) -> PeerReading:
    # What the peer cache holds after reading box2's own `probe --json` (no second host here).
    return reading_of("box2", peer_host_object(room=room, machine_room=room), time.time())


def test_a_job_queued_here_while_the_peer_has_room_is_found(isolated_home, store):
    config = write_watchdog_config(isolated_home)
    job_id = _queued(store)
    found = drafts(rules.queued_while_peer_fits, config, store, time.time(),
                   peers=[_peer(32 << 30)])
    assert [d.key for d in found] == [f"queued_while_peer_fits:job{job_id}:box2"]
    assert "swarmdeck peer run box2 -- python train.py" in found[0].advice


def test_a_job_queued_while_the_peer_is_full_too_is_not_found(isolated_home, store):
    config = write_watchdog_config(isolated_home)
    _queued(store)
    assert drafts(rules.queued_while_peer_fits, config, store, time.time(),
                  peers=[_peer(2 << 30)]) == []
