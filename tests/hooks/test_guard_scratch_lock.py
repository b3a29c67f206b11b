"""The scratch-lock guard through real `swarmdeck hook` processes: a foreground subagent's hold
ends when it hands back, though Claude Code sends its SubagentStop before the Agent call's
PostToolUse; and dispatches naming one folder at once get it once."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from claude_lines import hook_payload

SID = "cccc3333-0000-4000-8000-000000000331"
OTHER = "dddd4444-0000-4000-8000-000000000331"
STRICT = '[guards]\npreset = "strict"\n'
PROMPT = "Review src/.\nscratch: /tmp/swarmdeck-test-scratch-331\n"


def _dispatch(tool_use_id: str, session: str = SID) -> dict[str, Any]:
    return hook_payload("PreToolUse", session_id=session, tool_name="Agent",
                        tool_use_id=tool_use_id, cwd="/tmp",
                        tool_input={"prompt": PROMPT, "description": "d",
                                    "subagent_type": "reviewer"})


def _denied(done) -> bool:
    answer = done.answer or {}
    return answer.get("hookSpecificOutput", {}).get("permissionDecision") == "deny"


def _config(home: Path) -> None:
    (home / "config.toml").write_text(
        STRICT + 'dispatch_required_lines = []\nthread_cap = "off"\n')


def _stop(run_hook, agent: str) -> None:
    stop = hook_payload("SubagentStop", session_id=SID, agent_id=agent, agent_type="reviewer",
                        last_assistant_message="Done.", stop_hook_active=False, cwd="/tmp")
    assert run_hook("subagent-stop", stop).answer is None


def _answered(run_hook, tool_use_id: str, response: dict[str, Any]) -> None:
    post = hook_payload("PostToolUse", session_id=SID, tool_name="Agent",
                        tool_use_id=tool_use_id, cwd="/tmp", tool_input={"prompt": PROMPT},
                        tool_response=response)
    assert run_hook("post-tool-use", post).returncode == 0


def test_a_foreground_subagents_hold_ends_when_it_hands_back(
    run_hook, isolated_home: Path
) -> None:
    """Claude Code's order for a foreground subagent: SubagentStop, then PostToolUse."""
    _config(isolated_home)
    assert not _denied(run_hook("pre-tool-use", _dispatch("toolu_a1")))
    _stop(run_hook, "a1")
    _answered(run_hook, "toolu_a1", {"status": "completed", "agentId": "a1",
                                     "content": [{"type": "text", "text": "Done."}]})
    again = run_hook("pre-tool-use", _dispatch("toolu_b1", OTHER))
    assert not _denied(again), again.stdout


def test_a_hold_named_after_a_handback_without_a_status_is_dropped(
    run_hook, isolated_home: Path
) -> None:
    _config(isolated_home)
    assert not _denied(run_hook("pre-tool-use", _dispatch("toolu_a2")))
    _stop(run_hook, "a2")
    _answered(run_hook, "toolu_a2", {"agentId": "a2"})
    assert not _denied(run_hook("pre-tool-use", _dispatch("toolu_b2", OTHER)))


def test_a_background_subagent_keeps_its_hold_until_it_hands_back(
    run_hook, isolated_home: Path
) -> None:
    _config(isolated_home)
    assert not _denied(run_hook("pre-tool-use", _dispatch("toolu_a3")))
    _answered(run_hook, "toolu_a3", {"status": "async_launched", "agentId": "a3"})
    assert _denied(run_hook("pre-tool-use", _dispatch("toolu_b3", OTHER)))
    _stop(run_hook, "a3")
    assert not _denied(run_hook("pre-tool-use", _dispatch("toolu_b4", OTHER)))


def test_dispatches_naming_one_folder_at_once_get_it_once(
    run_hook, isolated_home: Path
) -> None:
    _config(isolated_home)
    calls = [_dispatch(f"toolu_p{n}", f"eeee5555-0000-4000-8000-00000000{n:04d}")
             for n in range(8)]
    with ThreadPoolExecutor(len(calls)) as pool:
        done = list(pool.map(lambda payload: run_hook("pre-tool-use", payload), calls))
    assert [_denied(d) for d in done].count(False) == 1, [d.stdout for d in done]


def test_take_never_overwrites_a_live_hold_of_another(isolated_home: Path) -> None:
    """The free check and the take are one locked update: a second taker is told who holds."""
    from swarmdeck.hooks import scratch_locks
    from swarmdeck.hooks.payload import HookInput

    first = HookInput("PreToolUse", _dispatch("toolu_t1"))
    second = HookInput("PreToolUse", _dispatch("toolu_t2", OTHER))
    path = "/tmp/swarmdeck-test-scratch-331"
    assert scratch_locks.take(path, first) is None
    assert "toolu_t1" in (scratch_locks.take(path, second) or "")
    assert "toolu_t1" in (scratch_locks.take(path, second) or "")
    assert scratch_locks.take(path, first) is None
