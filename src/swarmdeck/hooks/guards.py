"""Guards: checks made before a tool call runs, each `off | remind | deny`, one table of them.

A rule in a prompt is diluted at every compaction; a check before the command runs holds. Each
guard names what it refuses and, when it denies, the exact form that is allowed instead.
`[guards] preset` gives every guard its mode ("remind", the default; "strict": every guard
denies, but run-scope), `guards.NAME` (with `_` for `-`) sets one. The order of GUARDS is their
priority: of several denies, the first one's reason is given. An internal error never denies
(entry.py turns it into "no answer" and one line on stderr). Each guard's decisive test asks
`broken("guard-NAME")`, so the selftest can show the guard's case going through without it.
"""

from __future__ import annotations

import os
import shlex
from typing import TYPE_CHECKING

from swarmdeck.breaks import broken
from swarmdeck.hooks.contract import added_context, deny
from swarmdeck.hooks.guard_table import GUARDS
from swarmdeck.hooks.payload import HookInput
from swarmdeck.run_scope import SCOPE_KINDS, SCOPE_VARIABLE

if TYPE_CHECKING:
    from typing import Any

    from swarmdeck.hooks.settings import HookSettings
    from swarmdeck.hooks.shell_parse import Command, ShellFacts


TIMER_SECONDS = 30.0
"""A foreground sleep at least this long, outside a loop, is a timer."""
LOOP_TIMEOUT = "600"
"""Seconds the `timeout …` form a wait-loop deny suggests allows the loop."""
ALERT_SOURCE = "guard"
"""The source of the alerts a deny raises (the Alerts panel counts them on its guards line)."""
GUARD_FIELD = "swarmdeck_guard"
"""Key under which a call's guard verdicts are kept in its recorded hook event."""
SCOPE_WHY = 12
WRITE_TOOLS = ("Write", "Edit", "MultiEdit", "NotebookEdit")


class Finding:
    """One guard's case in this call: what it refuses and the allowed form.

    `remind_only`: what the call runs cannot be known before it runs (text piped into a shell,
    a script not read): the guard reminds, never denies, whatever its mode. `form`: the exact
    command line `allowed` suggests, when it gives one (bash_findings checks it)."""

    __slots__ = ("allowed", "form", "guard", "refused", "remind_only")

    def __init__(self, guard: str, refused: str, allowed: str, remind_only: bool = False,
                 form: str = "") -> None:
        self.guard = guard
        self.refused = refused
        self.allowed = allowed
        self.remind_only = remind_only
        self.form = form

    def reason(self, mode: str) -> str:
        verb = "refused" if mode == "deny" else "reminder"
        return f"swarmdeck guard {self.guard} ({verb}): {self.refused}. {self.allowed}"

    def __repr__(self) -> str:
        return f"Finding({self.guard!r}, {self.refused!r})"


def mode(settings: HookSettings, name: str) -> str:
    return settings.guards.get("modes", {}).get(name, "off")


# -- Bash ----------------------------------------------------------------------------------


class HeavyHit:
    """A heavy command found in the call: the command, the entry it matched, its label."""

    __slots__ = ("command", "entry", "label")

    def __init__(self, command: Command, entry: str) -> None:
        self.command = command
        self.entry = entry
        self.label = label_of(command)


def label_of(command: Command) -> str:
    """`--label` for the workload: the program the heavy command runs, by name."""
    name = command.program or "job"
    for suffix in (".sh", ".py", ".bash"):
        name = name.removesuffix(suffix)
    cleaned = "".join(char for char in name if char.isalnum() or char in "._-")
    return (cleaned or "job")[:40]


def heavy_hits(facts: ShellFacts, settings: HookSettings) -> list[HeavyHit]:
    """Every heavy simple command of the call (the list's entries, then the user's regexes)."""
    from swarmdeck.hooks.heavy import entries, heavy_entry

    listed = entries(settings.heavy)
    hits = []
    for item in facts.commands:
        entry = None if item.dynamic else heavy_entry(item.argv, listed)
        if entry is not None:
            hits.append(HeavyHit(item, entry.text))
        elif settings.heavy_patterns and not item.dynamic:
            from swarmdeck.hooks.classify import heavy_match

            # The user's own regexes see each command the shell runs, as its words.
            match = heavy_match(shlex.join(item.argv), settings)
            if match is not None:
                hits.append(HeavyHit(item, match.pattern))
    return hits


def bash_findings(
    hook: HookInput, command: str, settings: HookSettings, check_form: bool = True
) -> tuple[list[Finding], list[HeavyHit]]:
    """Each Bash guard's case in this command, in priority order, and its heavy commands.

    The first deny's suggested form is run through the guards itself (`check_form`): when a
    guard would refuse that too, the reason goes on with every refusing guard's own reason, so
    the agent is never sent from one deny to the next."""
    findings, hits = _bash_findings(hook, command, settings)
    refusing = [f for f in findings if mode(settings, f.guard) == "deny" and not f.remind_only]
    if check_form and refusing and refusing[0].form:
        _check_form(hook, refusing, settings)
    return findings, hits


def _check_form(hook: HookInput, refusing: list[Finding], settings: HookSettings) -> None:
    first = refusing[0]
    data = {key: value for key, value in hook.data.items() if key not in ("agent_id",
                                                                          "agent_type")}
    data["tool_input"] = {"command": first.form}
    # The form is the main agent's to run (a subagent is told to hand it back).
    again = HookInput(hook.event, data)
    found, _hits = _bash_findings(again, first.form, settings)
    refused_too = [f for f in found if mode(settings, f.guard) == "deny" and not f.remind_only]
    if not refused_too:
        return
    others = list(refusing[1:])
    named = {f.guard for f in refusing}
    others += [f for f in refused_too if f.guard not in named]
    first.allowed += (
        " — but " + ", ".join(sorted({f.guard for f in refused_too})) + " would refuse that"
        " as it stands; every guard's reason: "
        + " / ".join(f"{f.guard}: {f.refused}. {f.allowed}" for f in others)
    )


def _bash_findings(hook: HookInput, command: str, settings: HookSettings) -> tuple[
    list[Finding], list[HeavyHit]
]:
    from swarmdeck.hooks.shell_parse import parse

    facts = parse(command, hook.cwd)
    hits = heavy_hits(facts, settings)
    findings: list[Finding] = []
    checks = (
        ("heavy-outside-cage", lambda: _outside_cage(command, facts, hits)),
        ("heavy-by-subagent", lambda: _by_subagent(hook, command, facts, hits, settings)),
        ("timer", lambda: _timer(facts)),
        ("wait-loop", lambda: _wait_loop(facts)),
        ("run-scope", lambda: _run_scope(command, facts, hits)),
    )
    for name, check in checks:
        if mode(settings, name) == "off":
            continue
        found = check()
        if found is not None:
            findings.append(found)
    unknown = _unknown(command, facts)
    if unknown is not None and mode(settings, "heavy-outside-cage") != "off" and not any(
        f.guard == "heavy-outside-cage" for f in findings
    ):
        findings.append(unknown)
    return findings, hits


def _unknown(command: str, facts: ShellFacts) -> Finding | None:
    """A reminder for what runs uncaged and cannot be judged before it runs (facts.unread)."""
    if not facts.unread or broken("guard-heavy-outside-cage"):
        return None
    from swarmdeck.actions.hooks_install import swarmdeck_executable

    line = f"{shlex.quote(swarmdeck_executable())} run -- bash -c {shlex.quote(command.strip())}"
    return Finding(
        "heavy-outside-cage",
        f"what `{short(command)}` runs cannot be known before it runs ({facts.unread[0]})",
        f"If it runs heavy work, run it as: {line}",
        remind_only=True,
    )


def run_line(command: str, facts: ShellFacts, hits: list[HeavyHit]) -> str:
    """The exact `swarmdeck run --label L -- CMD` line for this call."""
    from swarmdeck.actions.hooks_install import swarmdeck_executable

    if hits and all(hit.command.caged for hit in hits):
        return command.strip()
    argv = run_argv(command, facts)
    program = shlex.quote(swarmdeck_executable())
    label = hits[0].label if hits else "job"
    return f"{program} run --label {shlex.quote(label)} -- {shlex.join(argv)}"


def run_argv(command: str, facts: ShellFacts) -> list[str]:
    """The argv `swarmdeck run` gets: the command's own words when it is one simple command
    (its facts, from the parser, say so), else `bash -c COMMAND`."""
    text = command.strip()
    top = [item for item in facts.commands if not item.via]
    simple = (
        len(top) == 1
        and not facts.loops
        and top[0].background == 0
        and not top[0].assignments
    )
    if simple and "\n" not in text:
        try:
            words = shlex.split(text)
        except ValueError:
            words = []
        if words and not any(word in ("|", "&&", ";", "||", "&") for word in words):
            return words
    return ["bash", "-c", text]


def short(command: str) -> str:
    """The command on one line, at most 120 characters, for a reason or a reminder."""
    flat = " ".join(command.split())
    return flat if len(flat) <= 120 else flat[:119] + "…"


def _seen(hit: HeavyHit) -> str:
    via = f", reached through {hit.command.via}" if hit.command.via else ""
    return f"`{shlex.join(hit.command.argv)[:120]}` (heavy: {hit.entry}{via})"


def _outside_cage(command: str, facts: ShellFacts, hits: list[HeavyHit]) -> Finding | None:
    uncaged = [hit for hit in hits if not hit.command.caged]
    if not uncaged or broken("guard-heavy-outside-cage"):
        return None
    line = run_line(command, facts, uncaged)
    return Finding(
        "heavy-outside-cage",
        f"`{short(command)}` runs {_seen(uncaged[0])} outside the cage",
        f"Run it as: {line}", form=line,
    )


def _by_subagent(
    hook: HookInput, command: str, facts: ShellFacts, hits: list[HeavyHit],
    settings: HookSettings,
) -> Finding | None:
    if not hits:
        return None
    if hook.agent_id is not None:
        if broken("guard-heavy-by-subagent"):
            return None
        line = run_line(command, facts, hits)
        return Finding(
            "heavy-by-subagent",
            f"a subagent ({hook.agent_id}) may not start heavy work: {_seen(hits[0])}",
            "Heavy tests are run by the main agent: hand back and say in your report which"
            f" command to run, as: {line}", form=line,
        )
    prefix = str(settings.guards.get("heavy_prefix") or "")
    if prefix and not command.lstrip().startswith(prefix):
        if broken("guard-heavy-by-subagent"):
            return None
        line = f"{prefix} {run_line(command, facts, hits)}"
        return Finding(
            "heavy-by-subagent",
            f"heavy work without the declaration guards.heavy_prefix asks for: {_seen(hits[0])}",
            f"Declare it and run it caged: {line}", form=line,
        )
    return None


def sleep_seconds(argv: list[str]) -> float | None:
    """What `sleep ARGS` waits, in seconds (GNU suffixes s/m/h/d, summed); None if unknown."""
    units = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
    total = 0.0
    for word in argv[1:]:
        if word == "infinity":
            return float("inf")
        unit = units.get(word[-1:])
        number = word[:-1] if unit is not None else word
        try:
            total += float(number) * (unit or 1.0)
        except ValueError:
            return None
    return total


def _timer(facts: ShellFacts) -> Finding | None:
    total = 0.0
    sleeps: list[str] = []
    for item in facts.commands:
        if item.program == "crontab" and not any(a in ("-l", "-V") for a in item.argv[1:]):
            if broken("guard-timer"):
                return None
            return Finding(
                "timer",
                f"`{shlex.join(item.argv)}` schedules work the session cannot see",
                "Keep `swarmdeck watch --wake` running as a background task to be woken, or"
                " run the work itself as a background task (run_in_background)",
            )
        if item.program != "sleep" or item.loop is not None or item.background:
            continue
        seconds = sleep_seconds(item.argv)
        if seconds is None:
            continue
        # The foreground sleeps of one call add up: `sleep 29; sleep 29` waits 58 s.
        total += seconds
        sleeps.append(shlex.join(item.argv))
        if total >= TIMER_SECONDS and not broken("guard-timer"):
            return Finding(
                "timer",
                f"`{'; '.join(sleeps)}` waits {total:g} s in the foreground as a timer",
                "To be woken when something happens, keep `swarmdeck watch --wake` running as a"
                " background task; to wait for a job, run it as a background task"
                " (run_in_background) and go on",
            )
    return None


def _wait_loop(facts: ShellFacts) -> Finding | None:
    for loop in facts.loops:
        if loop.waits and not loop.timeout and not broken("guard-wait-loop"):
            line = f"timeout {LOOP_TIMEOUT} bash -c {shlex.quote(loop.text)}"
            return Finding(
                "wait-loop",
                f"`{short(loop.text)}` waits with no end in sight",
                f"Give it a timeout: {line}", form=line,
            )
    if facts.nested_background and not broken("guard-wait-loop"):
        inner = facts.nested_background[0]
        line = _one_background(inner)
        return Finding(
            "wait-loop",
            f"`{short(inner)} &` puts something in the background inside the background, where"
            " no one waits for it or sees it end",
            "Start it once, as a background task (run_in_background), or with one `&`: " + line,
            form=line,
        )
    return None


def _one_background(text: str) -> str:
    inner = text.strip()
    if inner.startswith("(") and inner.endswith(")"):
        inner = inner[1:-1].strip()
    return inner.rstrip("&").strip() + " &"


def scope_declaration(command: Command) -> dict[str, str] | None:
    """The SWARMDECK_SCOPE fields of the command's assignments, or None when absent."""
    for assignment in command.assignments:
        name, _, value = assignment.partition("=")
        if name != SCOPE_VARIABLE:
            continue
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        fields: dict[str, str] = {}
        for part in value.split(";"):
            key, equals, text = part.partition("=")
            if equals:
                fields[key.strip()] = text.strip()
        return fields
    return None


def scope_kind(command: Command) -> str:
    """The kind of run the command's shape says it is: items (a selection), target, full."""
    args = command.argv[1:]
    if any(a in ("-k", "-m", "-p", "--package", "--test", "-run", "--lib", "--bin") or
           a.startswith(("-k=", "--package=", "-run=")) for a in args):
        return "items"
    words = [a for a in args if not a.startswith(("-", "+"))]
    if command.program in ("make", "gmake", "ninja", "cmake"):
        return "target" if words else "full"
    if any("/" in w or "::" in w or w.endswith((".py", ".rs", ".go", ".js", ".ts"))
           for w in words):
        return "items"
    return "full"


def _run_scope(command: str, facts: ShellFacts, hits: list[HeavyHit]) -> Finding | None:
    if not hits:
        return None
    hit = hits[0]
    declared = scope_declaration(hit.command)
    form = (f"{SCOPE_VARIABLE}='kind={scope_kind(hit.command)}; what=…; scope=…; why=…' "
            + run_line(command, facts, hits))
    problem = None
    if declared is None:
        problem = f"heavy work without a {SCOPE_VARIABLE} declaration"
    elif declared.get("kind") not in SCOPE_KINDS:
        problem = f"kind={declared.get('kind', '')!r} is none of {', '.join(SCOPE_KINDS)}"
    elif declared.get("kind") not in ("light", scope_kind(hit.command)):
        problem = (f"kind={declared['kind']} does not match the command's shape "
                   f"({scope_kind(hit.command)})")
    elif len(declared.get("why", "")) < SCOPE_WHY:
        problem = f"why= says less than {SCOPE_WHY} characters"
    if problem is None or broken("guard-run-scope"):
        return None
    return Finding("run-scope", f"{problem}: {_seen(hit)}", f"Declare it: {form}")


# -- the other tools -----------------------------------------------------------------------


def tool_findings(hook: HookInput, settings: HookSettings) -> list[Finding]:
    """Guards of PreToolUse calls other than Bash and Agent/Task."""
    tool = hook.tool_name or ""
    found: Finding | None = None
    if tool == "CronCreate" and mode(settings, "timer") != "off" and not broken("guard-timer"):
        found = Finding(
            "timer", "the CronCreate tool schedules work the session cannot see",
            "Keep `swarmdeck watch --wake` running as a background task to be woken, or run"
            " the work as a background task (run_in_background)",
        )
    elif tool in WRITE_TOOLS and mode(settings, "write-scope") != "off":
        found = _write_scope(hook, settings)
    elif tool == "SendMessage" and mode(settings, "continuation") != "off":
        found = _continuation(hook)
    return [found] if found is not None else []


def _write_scope(hook: HookInput, settings: HookSettings) -> Finding | None:
    from fnmatch import fnmatchcase

    agent_type = hook.text("agent_type")
    if agent_type is None:
        return None
    globs: list[str] | None = None
    for item in settings.guards.get("write_scopes", []):
        kind, _, patterns = item.partition(":")
        if kind.strip() == agent_type:
            globs = patterns.split()
    if globs is None:
        return None
    path = hook.tool_input.get("file_path") or hook.tool_input.get("notebook_path")
    if not isinstance(path, str) or not path:
        return None
    cwd = hook.cwd or os.getcwd()
    full = os.path.normpath(os.path.join(cwd, path))
    relative = os.path.relpath(full, cwd)
    if any(fnmatchcase(relative, glob) or fnmatchcase(full, glob) for glob in globs):
        return None
    if broken("guard-write-scope"):
        return None
    return Finding(
        "write-scope",
        f"a {agent_type} subagent may not write {relative}",
        f"It may write only {' '.join(globs) or 'nothing'}: write there, or say in the report"
        " what should change",
    )


def _continuation(hook: HookInput) -> Finding | None:
    target = hook.tool_input.get("to")
    if not isinstance(target, str) or not target:
        return None
    if not handed_back(target) or broken("guard-continuation"):
        return None
    return Finding(
        "continuation",
        f"subagent {target} has already handed back",
        "Dispatch a new subagent and point its prompt to that report (`swarmdeck handover"
        f" {target}` prints what it needs)",
    )


def handed_back(agent_id: str) -> bool:
    """Whether a SubagentStop of this agent is recorded that the handback guard let through
    (a blocked one keeps the subagent working)."""
    import json

    conn = _state_connection()
    if conn is None:
        return False
    try:
        rows = conn.execute(
            "SELECT payload FROM hook_events WHERE event = 'SubagentStop' AND agent_id = ?",
            (agent_id,),
        ).fetchall()
    finally:
        conn.close()
    for (payload,) in rows:
        try:
            verdicts = json.loads(payload or "{}").get(GUARD_FIELD) or []
        except (ValueError, AttributeError):
            verdicts = []
        if not any(isinstance(v, dict) and v.get("decision") == "deny" for v in verdicts):
            return True
    return False


def _state_connection() -> Any:
    import sqlite3

    from swarmdeck import paths

    db = paths.state_db_path()
    if not os.path.isfile(db):
        return None
    return sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1.0)


# -- dispatch ------------------------------------------------------------------------------


def dispatch_findings(hook: HookInput, settings: HookSettings) -> list[Finding]:
    """The dispatch guards' cases for an Agent/Task call, in priority order."""
    prompt = hook.tool_input.get("prompt")
    prompt = prompt if isinstance(prompt, str) else ""
    subagent_type = hook.tool_input.get("subagent_type")
    findings: list[Finding] = []
    checks = (
        ("dispatch-lines", lambda: _required_lines(prompt, settings)),
        ("dispatch-types", lambda: _forbidden_type(subagent_type, settings)),
        ("thread-cap", lambda: _thread_cap(prompt, settings)),
        ("placeholders", lambda: _placeholders(prompt)),
    )
    for name, check in checks:
        if mode(settings, name) == "off":
            continue
        found = check()
        if found is not None:
            findings.append(found)
    return findings


def _required_lines(prompt: str, settings: HookSettings) -> Finding | None:
    lowered = prompt.lower()
    missing = [line for line in settings.guards.get("required_lines", [])
               if line.strip() and line.strip().lower() not in lowered]
    if not missing or broken("guard-dispatch-lines"):
        return None
    return Finding(
        "dispatch-lines",
        "the prompt lacks " + ", ".join(f"`{line}`" for line in missing),
        "Add these lines to the prompt: " + " / ".join(missing),
    )


def _forbidden_type(subagent_type: object, settings: HookSettings) -> Finding | None:
    forbidden = settings.guards.get("forbidden_types", [])
    name = subagent_type if isinstance(subagent_type, str) and subagent_type else \
        "general-purpose"
    if name not in forbidden or broken("guard-dispatch-types"):
        return None
    return Finding(
        "dispatch-types",
        f"subagent type {name} may not be dispatched",
        "Give subagent_type a type of its own (a custom agent with its tools and scope)",
    )


def _thread_cap(prompt: str, settings: HookSettings) -> Finding | None:
    threads = int(settings.guards.get("heavy_threads", 1))
    line = next((text for text in prompt.splitlines()
                 if text.strip().lower().startswith("thread cap:")), None)
    numbers = []
    if line is not None:
        numbers = [word for word in line.split(":", 1)[1].replace(",", " ").split()
                   if word.isdigit()]
    if len(numbers) == 1 and int(numbers[0]) == threads:
        return None
    if broken("guard-thread-cap"):
        return None
    said = "no `thread cap:` line" if line is None else f"`{line.strip()}`"
    return Finding(
        "thread-cap",
        f"the prompt has {said}; this host's heavy threads are {threads}",
        f"Put this line in the prompt: thread cap: {threads}",
    )


def _placeholders(prompt: str) -> Finding | None:
    start = prompt.find("<fill in")
    if start < 0 or broken("guard-placeholders"):
        return None
    end = prompt.find(">", start)
    shown = prompt[start : end + 1 if end > 0 else start + 60]
    return Finding(
        "placeholders",
        f"the prompt still has `{shown}`",
        "Fill in every `<fill in …>` before dispatching",
    )


def scratch_path(prompt: str, cwd: str | None) -> str | None:
    """The folder a `scratch: PATH` line of the prompt names, absolute."""
    for line in prompt.splitlines():
        head, colon, rest = line.strip().partition(":")
        if colon and head.strip().lower() == "scratch" and rest.strip():
            path = os.path.expanduser(rest.strip().split()[0])
            return os.path.normpath(os.path.join(cwd or os.getcwd(), path))
    return None


def scratch_lock_finding(path: str, held: str) -> Finding | None:
    """The scratch-lock guard's case: `path` is held by `held` (scratch_locks.take said so).

    The dispatch guards above are pure checks; this one is decided by the locked take that
    entry.py makes once they let the dispatch through."""
    if broken("guard-scratch-lock"):
        return None
    return Finding(
        "scratch-lock",
        f"scratch folder {path} is held by {held}",
        "Give this subagent a scratch folder of its own (`scratch: PATH` with another PATH),"
        " or wait until that one hands back",
    )


# -- handback ------------------------------------------------------------------------------


def handback_findings(hook: HookInput, settings: HookSettings) -> list[Finding]:
    """The handback guard's case; none when this stop follows a block (stop_hook_active), so
    that a subagent is held back at most once."""
    if mode(settings, "handback") == "off" or hook.data.get("stop_hook_active") is True:
        return []
    from swarmdeck.hooks.scratch_locks import git_tracked, made_folders

    message = hook.text("last_assistant_message") or ""
    cwd = hook.cwd or os.getcwd()
    kept = {
        os.path.normpath(os.path.join(cwd, line.split(":", 1)[1].split()[0]))
        for line in message.splitlines()
        if line.strip().lower().startswith("not deleted:") and line.split(":", 1)[1].split()
    }
    left = [
        path for path in made_folders(hook)
        if os.path.isdir(path) and os.path.normpath(path) not in kept
    ]
    # A path git tracks is the project's own: never one to delete (asked only of what is left).
    left = [path for path in left if not git_tracked(path)]
    if not left or broken("guard-handback"):
        return []
    return [Finding(
        "handback",
        "scratch copies or build folders this subagent made still exist: " + ", ".join(left),
        "Of those you made for this task: delete them, or say `not deleted: PATH` in your report"
        " (one line each, and why)",
    )]


# -- the answer ----------------------------------------------------------------------------


def decide(
    hook: HookInput, findings: list[Finding], settings: HookSettings, event: str = "PreToolUse"
) -> tuple[dict[str, Any] | None, list[str]]:
    """The answer for these findings (a deny beats reminders), and the reminder texts.

    The verdicts are kept in the hook's data (GUARD_FIELD) so the recorded event holds them."""
    denied = [f for f in findings if mode(settings, f.guard) == "deny" and not f.remind_only]
    reminded = [f for f in findings if mode(settings, f.guard) == "remind" or
                (f.remind_only and mode(settings, f.guard) == "deny")]
    verdicts = [{"guard": f.guard, "decision": "deny", "refused": f.refused} for f in denied]
    verdicts += [{"guard": f.guard, "decision": "remind", "refused": f.refused}
                 for f in reminded]
    if verdicts:
        hook.data[GUARD_FIELD] = verdicts
    if denied:
        reason = denied[0].reason("deny")
        if event == "SubagentStop":
            return {"decision": "block", "reason": reason}, []
        return deny(reason), []
    return None, [f.reason("remind") for f in reminded]


def context_answer(texts: list[str]) -> dict[str, Any] | None:
    if not texts:
        return None
    return added_context("PreToolUse", "\n".join(texts))


def denied_guards(hook: HookInput) -> list[str]:
    """The guards that denied this call (from its data, after `decide`)."""
    verdicts = hook.data.get(GUARD_FIELD)
    if not isinstance(verdicts, list):
        return []
    return [v["guard"] for v in verdicts if isinstance(v, dict) and v.get("decision") == "deny"]


def raise_guard_alert(hook: HookInput, now: float) -> None:
    """An alert for each guard that denied this call, counted per guard and session."""
    guards = denied_guards(hook)
    if not guards:
        return
    from swarmdeck.actions.alerts import raise_alert
    from swarmdeck.state import StateStore

    verdicts = {v["guard"]: v["refused"] for v in hook.data[GUARD_FIELD]
                if isinstance(v, dict) and v.get("decision") == "deny"}
    store = StateStore.open_default(verify=False)
    try:
        with store.transaction() as conn:
            for name in guards:
                session = (hook.session_id or "")[:8]
                raise_alert(
                    conn, f"guard:{name}:{hook.session_id or ''}", "warning", ALERT_SOURCE, None,
                    f"guard {name} refused in session {session}: {verdicts[name][:200]}", now,
                )
    finally:
        store.close()


# -- samples -------------------------------------------------------------------------------


class Sample:
    """One guard's case as a hook call: the input it refuses and a twin it lets through.

    `event` is the `swarmdeck hook` argument; `setup` names what the call needs around it:
    "" nothing, "handed-back" a recorded SubagentStop of agent `a-done`, "scratch-held" a
    hold of /tmp/swarmdeck-sample-scratch by another dispatch, "made-folder" the folder
    `sample-build-copy` in the call's cwd, made by running `cp -r src sample-build-copy`, the
    command the transcript the input names records (both done by the caller),
    "limit" hooks.max_running_subagents = 1 and one running subagent in the transcript. The
    selftest turns each row into a cell; the hook tests run each through
    real `swarmdeck hook` processes."""

    __slots__ = ("allowed", "denied", "event", "guard", "setup")

    def __init__(self, guard: str, event: str, denied: dict[str, Any], allowed: dict[str, Any],
                 setup: str = "") -> None:
        self.guard = guard
        self.event = event
        self.denied = denied
        self.allowed = allowed
        self.setup = setup


def _bash(command: str, **more: Any) -> dict[str, Any]:
    return {"hook_event_name": "PreToolUse", "tool_name": "Bash",
            "tool_input": {"command": command}, "tool_use_id": "toolu_sample", **more}


def _agent(prompt: str, subagent_type: str = "reviewer") -> dict[str, Any]:
    return {"hook_event_name": "PreToolUse", "tool_name": "Agent", "tool_use_id": "toolu_sample",
            "tool_input": {"prompt": prompt, "description": "sample",
                           "subagent_type": subagent_type}}


_GOOD_PROMPT = "Review src/.\nheavy tests: do not run\nthread cap: {threads}\n"
_SUB = {"agent_id": "a-sample", "agent_type": "reviewer"}

SAMPLES: tuple[Sample, ...] = (
    Sample("heavy-outside-cage", "pre-tool-use",
           _bash("cargo test --workspace"), _bash("cargo --version")),
    Sample("heavy-by-subagent", "pre-tool-use",
           _bash("swarmdeck run --label cargo -- cargo test", **_SUB),
           _bash("cargo fmt --check", **_SUB)),
    Sample("timer", "pre-tool-use", _bash("sleep 300; echo check"), _bash("sleep 2; echo check")),
    Sample("wait-loop", "pre-tool-use",
           _bash("while ! test -f done; do sleep 5; done"),
           _bash("timeout 600 bash -c 'while ! test -f done; do sleep 5; done'")),
    Sample("run-scope", "pre-tool-use",
           _bash("swarmdeck run --label pytest -- pytest -q"),
           _bash("SWARMDECK_SCOPE='kind=full; what=all tests; scope=repo; why=before the merge"
                 " of the parser' swarmdeck run --label pytest -- pytest -q")),
    Sample("subagent-limit", "pre-tool-use",
           _agent(_GOOD_PROMPT), _agent(_GOOD_PROMPT), setup="limit"),
    Sample("dispatch-lines", "pre-tool-use",
           _agent("Review src/.\nthread cap: {threads}\n"), _agent(_GOOD_PROMPT)),
    Sample("dispatch-types", "pre-tool-use",
           _agent(_GOOD_PROMPT, "general-purpose"), _agent(_GOOD_PROMPT)),
    Sample("thread-cap", "pre-tool-use",
           _agent("Review src/.\nheavy tests: do not run\nthread cap: 9999\n"),
           _agent(_GOOD_PROMPT)),
    Sample("placeholders", "pre-tool-use",
           _agent(_GOOD_PROMPT + "Scope: <fill in the files>\n"), _agent(_GOOD_PROMPT)),
    Sample("scratch-lock", "pre-tool-use",
           _agent(_GOOD_PROMPT + "scratch: /tmp/swarmdeck-sample-scratch\n"),
           _agent(_GOOD_PROMPT + "scratch: /tmp/swarmdeck-sample-scratch-2\n"),
           setup="scratch-held"),
    Sample("write-scope", "pre-tool-use",
           {"hook_event_name": "PreToolUse", "tool_name": "Write", **_SUB,
            "tool_input": {"file_path": "src/main.py", "content": "x"}},
           {"hook_event_name": "PreToolUse", "tool_name": "Write", **_SUB,
            "tool_input": {"file_path": "docs/review.md", "content": "x"}}),
    Sample("continuation", "pre-tool-use",
           {"hook_event_name": "PreToolUse", "tool_name": "SendMessage",
            "tool_input": {"to": "a-done", "message": "one more thing"}},
           {"hook_event_name": "PreToolUse", "tool_name": "SendMessage",
            "tool_input": {"to": "a-running", "message": "one more thing"}},
           setup="handed-back"),
    Sample("handback", "subagent-stop",
           {"hook_event_name": "SubagentStop", "agent_id": "a-sample", "agent_type": "reviewer",
            "last_assistant_message": "Done.", "stop_hook_active": False},
           {"hook_event_name": "SubagentStop", "agent_id": "a-sample", "agent_type": "reviewer",
            "last_assistant_message": "Done.\nnot deleted: sample-build-copy (kept for the"
            " lead)", "stop_hook_active": False},
           setup="made-folder"),
)
"""One sample per guard, in GUARDS' order. `{threads}` in a prompt stands for the host's
heavy threads; the write-scope sample needs guards.write_scopes = ["reviewer: docs/**"]."""
SAMPLE_CONFIG = (
    '[guards]\npreset = "strict"\nrun_scope = "deny"\nwrite_scopes = ["reviewer: docs/**"]\n'
)
"""The config the samples are judged under."""


# -- counts --------------------------------------------------------------------------------

COUNT_WINDOW = 24 * 3600.0


def guard_counts(conn: Any, since: float) -> dict[str, dict[str, int]]:
    """Per guard, how often it reminded and denied in hook events received since `since`.

    Light calls wait in the spool, but a call a guard answered never does: it is in
    hook_events as soon as it is answered."""
    import json

    counts = {guard.name: {"remind": 0, "deny": 0} for guard in GUARDS}
    rows = conn.execute(
        "SELECT payload FROM hook_events WHERE received_at >= ? AND payload LIKE ?",
        (since, f'%"{GUARD_FIELD}"%'),
    )
    for (payload,) in rows:
        try:
            verdicts = json.loads(payload).get(GUARD_FIELD)
        except (ValueError, AttributeError):
            continue
        for verdict in verdicts if isinstance(verdicts, list) else []:
            if not isinstance(verdict, dict):
                continue
            figures = counts.get(str(verdict.get("guard")))
            decision = verdict.get("decision")
            if figures is not None and decision in figures:
                figures[decision] += 1
    return counts
