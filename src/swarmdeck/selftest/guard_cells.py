"""The guards' cells: each guard's sample (hooks/guards.py SAMPLES) through real `swarmdeck hook`
processes, in the strict preset; the refused input must be denied naming its guard and its twin
let through. `guard-NAME` must turn the guard's own cell red. every_cell.all_cells() adds them
to the table after the cells of cells.py.

Each sample's `setup` is made here the way Claude Code would make it: earlier hook calls
(a subagent that handed back, another dispatch holding a scratch folder, a running subagent
under a limit of one) or files (a folder a subagent's transcript says it made).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from typing import Any

from swarmdeck.hooks.guards import SAMPLE_CONFIG, SAMPLES, Sample
from swarmdeck.selftest.cells import Cell, expect
from swarmdeck.selftest.sandbox import CellFailed, Place, kill_session, swarmdeck_argv

THREADS = 3
HOOK_TIMEOUT = 30.0
SESSION = "5e1f7e57-0000-4000-8000-00000000cafe"
OTHER_SESSION = "5e1f7e57-0000-4000-8000-00000000beef"
UNANSWERED = ("swarmdeck hook: not read:", "swarmdeck hook: input not read:",
              "swarmdeck hook: nothing done:")
"""How the hook's stderr begins when it gave no answer at all (hooks/entry.py)."""


def _payload(place: Place, data: dict[str, Any], **more: Any) -> dict[str, Any]:
    fields = json.loads(json.dumps(data).replace("{threads}", str(THREADS)))
    fields.setdefault("session_id", SESSION)
    fields.setdefault("cwd", str(place.root))
    fields.setdefault("permission_mode", "default")
    fields.setdefault(
        "transcript_path", str(place.claude_dir / "projects" / "selftest" / f"{SESSION}.jsonl")
    )
    fields.update(more)
    return fields


def hook(place: Place, event: str, payload: dict[str, Any]) -> tuple[str, str]:
    """Run `swarmdeck hook EVENT` with `payload`; its ("deny"|"block"|"", reason)."""
    proc = place.start(swarmdeck_argv("hook", event), stdin=True)
    try:
        out, err = proc.communicate(json.dumps(payload), timeout=HOOK_TIMEOUT)
    except subprocess.TimeoutExpired:
        kill_session(proc.pid)
        proc.communicate()
        raise CellFailed(f"swarmdeck hook {event} did not answer in {HOOK_TIMEOUT:g} s") from None
    if proc.returncode != 0:
        raise CellFailed(f"swarmdeck hook {event} exited {proc.returncode}: {err.strip()[:120]}")
    if not out.strip() and any(line.startswith(UNANSWERED) for line in err.splitlines()):
        # It gave up (out of its budget, say) and let the call through: no decision of the
        # guard's, so neither a refusal nor an allowed twin.
        said = next(line for line in err.splitlines() if line.startswith(UNANSWERED))
        raise CellFailed(f"swarmdeck hook {event} gave no answer: {said[:120]}")
    answer = json.loads(out) if out.strip() else {}
    if answer.get("decision") == "block":
        return "block", str(answer.get("reason", ""))
    inner = answer.get("hookSpecificOutput", {})
    return str(inner.get("permissionDecision", "")), str(inner.get("permissionDecisionReason", ""))


def _config(place: Place, extra: str = "") -> None:
    place.config.write_text(f"[cores]\nheavy_threads = {THREADS}\n" + SAMPLE_CONFIG + extra)


def _stop(place: Place, agent: str) -> None:
    hook(place, "subagent-stop", _payload(place, {
        "hook_event_name": "SubagentStop", "agent_id": agent, "agent_type": "reviewer",
        "last_assistant_message": "Done.", "stop_hook_active": False,
    }))


def _setup(place: Place, sample: Sample) -> dict[str, Any]:
    """What the sample's call needs around it; the fields to add to both calls."""
    if sample.setup == "handed-back":
        _stop(place, "a-done")
    elif sample.setup == "scratch-held":
        other = _payload(place, sample.denied, tool_use_id="toolu_other",
                         session_id=OTHER_SESSION)
        expect(hook(place, "pre-tool-use", other)[0] == "", "the first scratch hold was refused")
    elif sample.setup == "made-folder":
        (place.root / "sample-build-copy").mkdir()
        transcript = place.root / "agent-a-sample.jsonl"
        line = {"type": "assistant", "isSidechain": True, "agentId": "a-sample",
                "message": {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "toolu_cp", "name": "Bash",
                     "input": {"command": "cp -r src sample-build-copy"}}]}}
        transcript.write_text(json.dumps(line) + "\n")
        return {"agent_transcript_path": str(transcript)}
    elif sample.setup == "limit":
        _config(place, "\n[hooks]\nmax_running_subagents = 1\n")
        hook(place, "subagent-start", _payload(place, {
            "hook_event_name": "SubagentStart", "agent_id": "a-running", "agent_type": "reviewer",
        }))
    return {}


def guard_check(sample: Sample) -> Callable[[Place], str]:
    """The check of one guard's cell."""

    def check(place: Place) -> str:
        _config(place)
        more = _setup(place, sample)
        decision, reason = hook(place, sample.event, _payload(place, sample.denied, **more))
        said = f"{decision}: {reason[:60]}" if decision else "allowed"
        expect(decision in ("deny", "block") and f"guard {sample.guard} " in reason,
               f"its sample was not refused by it ({said})")
        if sample.setup == "limit":
            _stop(place, "a-running")
        twin, why = hook(place, sample.event, _payload(place, sample.allowed, **more))
        expect(twin == "", f"its allowed twin was refused: {why[:100]}")
        return f"{decision}: its sample; its twin allowed"

    return check


def guard_cells() -> list[Cell]:
    """One cell per guard sample, in GUARDS' order."""
    return [
        Cell(f"guard-{sample.guard}", f"guard {sample.guard} refuses its case, allows its twin",
             guard_check(sample), (f"guard-{sample.guard}",))
        for sample in SAMPLES
    ]
