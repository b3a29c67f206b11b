"""`swarmdeck hook EVENT`: read Claude Code's hook input, answer per the contract, record the call.

A hook must never block an agent by accident: whatever goes wrong (bad JSON, a missing field,
huge input, a probe that fails, a locked database, a FIFO where a file should be) it exits 0,
prints nothing or a valid answer, and leaves a short "not read" note on stderr, which Claude Code
keeps in its debug log only. Every step runs inside a time limit (deadline.py): reading and
answering within the event's budget, recording within its own, both inside the timeout
`hooks install` sets, so no input can make a hook outlive it.

The light path (a Bash call that matches no heavy pattern) stays small: the input is read by
json, the answer decided from cached settings by substring tests (classify.py), and the call
appended to the spool (hook_spool.py) instead of the database. Heavy modules are imported
inside the handlers that need them.
"""

from __future__ import annotations

import io
import os
import sys
import time
from io import BufferedIOBase, TextIOBase

from swarmdeck.hook_spool import DISPATCH_TOOLS
from swarmdeck.hooks.contract import emit
from swarmdeck.hooks.payload import (
    KNOWN_EVENTS,
    HookInput,
    InputNotRead,
    event_name,
    parse_input,
    read_raw,
)
from swarmdeck.hooks.settings import HookSettings
from swarmdeck.paths import empty_place_refusal

BASH = "Bash"
GUARDED_TOOLS = ("Write", "Edit", "MultiEdit", "NotebookEdit", "SendMessage", "CronCreate")
"""PreToolUse tools only guards look at (hooks/guards.py)."""
TOOL_ENDS = ("PostToolUse", "PostToolUseFailure")
"""The events that end a tool call: a failed one raises the second instead of the first."""


def main(argv: list[str]) -> int:
    """Entry point for `swarmdeck hook EVENT`: answer, then end the process with status 0.

    The process ends with `os._exit` once the output is flushed: the interpreter's teardown of
    every imported module would add a tenth to the cost of each light hook, and nothing is left
    to clean up (the store's connection is closed, nothing is buffered). In-process callers use
    `run`.
    """
    # A stream closed before the start is None: what would go there goes nowhere instead.
    stdout = sys.stdout or io.StringIO()
    stderr = sys.stderr or io.StringIO()
    stdin = sys.stdin.buffer if sys.stdin is not None else io.BytesIO()
    run(argv, stdin, stdout, stderr, process_ends=True)
    for stream in (stdout, stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            # A closed pipe: Claude Code stopped listening; exit 0 all the same.
            continue
    os._exit(0)


def run(
    argv: list[str],
    stdin: BufferedIOBase,
    stdout: TextIOBase,
    stderr: TextIOBase,
    process_ends: bool = False,
) -> None:
    """Answer one hook call; every failure becomes a note on stderr, never an exit status.

    Unless the process ends right after (`process_ends`), the call's connection to the state
    file is closed before it returns, so an in-process caller does not collect them.
    """
    try:
        _run(argv, stdin, stdout, stderr)
    finally:
        record = sys.modules.get("swarmdeck.hooks.record")
        if record is not None and not process_ends:
            record.close_left_open()


def _run(argv: list[str], stdin: BufferedIOBase, stdout: TextIOBase, stderr: TextIOBase) -> None:
    from swarmdeck.hooks.deadline import RECORD_BUDGET, TimeLimit, answer_budget

    if stdin.isatty():
        note(stderr, "input not read: stdin is a terminal (Claude Code pipes the event JSON)")
        return
    refusal = empty_place_refusal()
    if refusal is not None:
        # Neither answered nor recorded: the real state is not this call's (see paths.py).
        note(stderr, f"nothing done: {refusal}")
        return
    argument = argv[0] if argv else ""
    spooled: bytes | None = None
    try:
        with TimeLimit(answer_budget(event_name(argument))):
            hook, spooled = _answer(stdin, argument, stdout)
    except InputNotRead as error:
        note(stderr, f"input not read: {error}")
        return
    except _NotAnswered as failed:
        note(stderr, f"not read: {failed.args[0]}")
        hook = failed.args[1]
    except Exception as error:  # reading must not block the agent; see module doc
        note(stderr, f"input not read: {error.__class__.__name__}")
        return
    if hook.event not in KNOWN_EVENTS:
        # A typo in a hand-written settings.json would turn a hook off without a trace; the
        # call is still recorded, as an event newer than this list is worth keeping.
        note(stderr, f"event {hook.event!r} is none swarmdeck knows (`swarmdeck hook --help`"
                     " lists them): recorded, not answered")
    try:
        with TimeLimit(RECORD_BUDGET):
            _record(hook, spooled, time.time())
    except Exception as error:  # the event is lost, the agent goes on
        note(stderr, f"event not recorded: {error.__class__.__name__}: {error}")


class _NotAnswered(Exception):
    """The input was read but no answer came: (why, the HookInput)."""


def _answer(
    stdin: BufferedIOBase, argument: str, stdout: TextIOBase
) -> tuple[HookInput, bytes | None]:
    """The input, and its bytes when the call was light and may go to the spool."""
    raw = read_raw(stdin)
    hook = parse_input(raw, argument)
    try:
        reply = answer(hook)
        emit(reply, stdout)
    except Exception as error:  # a failed answer is no answer, never a block
        raise _NotAnswered(f"{error.__class__.__name__}: {error}", hook) from None
    light = reply is None and hook.event == "PreToolUse" and hook.tool_name == BASH
    return hook, raw if light else None


def _record(hook: HookInput, spooled: bytes | None, now: float) -> None:
    """Append a light call to the spool; any other, or one the spool refuses, to the database."""
    if spooled is not None:
        from swarmdeck.hook_spool import append

        if append(spooled, now):
            return
    from swarmdeck.hooks.record import record_event

    record_event(hook, now)
    if "swarmdeck_guard" in hook.data:
        from swarmdeck.hooks.guards import raise_guard_alert

        raise_guard_alert(hook, now)


def answer(hook: HookInput) -> dict[str, object] | None:
    """The JSON to print for this call, or None to print nothing."""
    if hook.event == "PreToolUse":
        if hook.tool_name == BASH:
            return _bash(hook)
        if hook.tool_name in DISPATCH_TOOLS:
            return _dispatch(hook)
        if hook.tool_name in GUARDED_TOOLS:
            return _tool(hook)
        return None
    if hook.event == "SessionStart":
        from swarmdeck.hooks.deadline import SESSION_START_BUDGET, TimeLimit
        from swarmdeck.hooks.session_start import session_start_answer

        with TimeLimit(SESSION_START_BUDGET):
            return session_start_answer(hook)
    if hook.event in TOOL_ENDS:
        from swarmdeck.hooks.findings_note import findings_answer

        if hook.event == "PostToolUse" and hook.tool_name in DISPATCH_TOOLS:
            _name_scratch_holder(hook)
        return findings_answer(hook)
    if hook.event == "SubagentStop":
        return _subagent_stop(hook)
    return None


def _user_literals(settings: HookSettings) -> tuple[str, ...] | None:
    """Strings one of which each of the user's own heavy regexes needs; None if one has none."""
    found: list[str] = []
    for literals in settings.literals:
        if literals is None:
            return None
        found.extend(literals)
    return tuple(found)


def _bash(hook: HookInput) -> dict[str, object] | None:
    command = hook.command
    if command is None:
        return None
    from swarmdeck.hooks.classify import CLASSIFY_LIMIT
    from swarmdeck.hooks.heavy import certainly_light
    from swarmdeck.hooks.settings import hook_settings

    settings = hook_settings()
    modes = settings.guards.get("modes", {})
    waits = modes.get("timer", "off") != "off" or modes.get("wait-loop", "off") != "off"
    head = command[:CLASSIFY_LIMIT]
    if len(command) <= CLASSIFY_LIMIT and certainly_light(
        head, settings.heavy, _user_literals(settings), waits
    ):
        return None
    from swarmdeck.hooks.guards import bash_findings, context_answer, decide

    findings, hits = bash_findings(hook, command, settings)
    reply, reminders = decide(hook, findings, settings)
    uncaged = [h for h in hits if not h.command.caged]
    heavy_reminder = any(f.guard == "heavy-outside-cage" and not f.remind_only for f in findings)
    if reply is not None or not heavy_reminder or not uncaged:
        return reply if reply is not None else context_answer(reminders)
    from swarmdeck.hooks.bash_reminder import reminder_text
    from swarmdeck.hooks.classify import HeavyMatch
    from swarmdeck.hooks.contract import added_context
    from swarmdeck.hooks.deadline import REMINDER_BUDGET, TimeLimit

    hit = uncaged[0]
    match = HeavyMatch(hit.entry, " ".join(hit.command.argv), hit.label)
    others = [text for text in reminders if "heavy-outside-cage" not in text]
    with TimeLimit(REMINDER_BUDGET):
        rich = reminder_text(hook, command, match)
    return added_context("PreToolUse", "\n".join([rich, *others]))


def _dispatch(hook: HookInput) -> dict[str, object] | None:
    from swarmdeck.hooks.deadline import REMINDER_BUDGET, TimeLimit
    from swarmdeck.hooks.guards import (
        Finding,
        context_answer,
        decide,
        dispatch_findings,
        mode,
        scratch_lock_finding,
        scratch_path,
    )
    from swarmdeck.hooks.settings import hook_settings

    settings = hook_settings()
    findings: list[Finding] = []
    limit = settings.max_running_subagents
    if limit > 0 and mode(settings, "subagent-limit") != "off":
        from swarmdeck.hooks.dispatch_guard import guard_reason

        with TimeLimit(REMINDER_BUDGET):
            reason = guard_reason(hook, limit)
        if reason is not None:
            findings.append(Finding("subagent-limit", reason, "Dispatch it once one has ended."))
    findings += dispatch_findings(hook, settings)
    reply, reminders = decide(hook, findings, settings)
    if reply is not None:
        return reply
    prompt = hook.tool_input.get("prompt")
    scratch = scratch_path(prompt, hook.cwd) if isinstance(prompt, str) else None
    if scratch is not None and mode(settings, "scratch-lock") != "off":
        from swarmdeck.hooks.scratch_locks import take

        # Checked and taken under one lock: of dispatches naming it at once, one gets it.
        held = take(scratch, hook)
        lock = scratch_lock_finding(scratch, held) if held is not None else None
        if lock is not None:
            reply, reminders = decide(hook, [*findings, lock], settings)
    return reply if reply is not None else context_answer(reminders)


def _tool(hook: HookInput) -> dict[str, object] | None:
    from swarmdeck.hooks.guards import context_answer, decide, tool_findings
    from swarmdeck.hooks.settings import hook_settings

    settings = hook_settings()
    reply, reminders = decide(hook, tool_findings(hook, settings), settings)
    return reply if reply is not None else context_answer(reminders)


def _subagent_stop(hook: HookInput) -> dict[str, object] | None:
    from swarmdeck.hooks.guards import decide, handback_findings
    from swarmdeck.hooks.settings import hook_settings

    settings = hook_settings()
    reply, _reminders = decide(hook, handback_findings(hook, settings), settings, "SubagentStop")
    if reply is None and hook.agent_id is not None:
        from swarmdeck.hooks.scratch_locks import release

        release(hook.agent_id)
    return reply


def _name_scratch_holder(hook: HookInput) -> None:
    """The Agent call's response names the subagent: a scratch hold becomes that agent's, or
    ends when the subagent has already handed back (scratch_locks.py)."""
    response = hook.data.get("tool_response")
    agent_id = response.get("agentId") if isinstance(response, dict) else None
    if isinstance(agent_id, str) and agent_id and hook.tool_use_id:
        from swarmdeck.hooks.scratch_locks import name_holder

        # A foreground call answers once the subagent has finished ("completed").
        finished = isinstance(response, dict) and response.get("status") == "completed"
        name_holder(hook.tool_use_id, agent_id, finished)


def note(stderr: TextIOBase, text: str) -> None:
    """One line for Claude Code's debug log."""
    try:
        stderr.write(f"swarmdeck hook: {text}\n")
        stderr.flush()
    except (OSError, ValueError):
        # stderr closed or broken: there is nowhere left to say it, and exit 0 still holds.
        return
