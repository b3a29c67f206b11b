"""The guards' table: each guard's name, what it refuses and its mode in each preset.

Apart from the checks themselves (guards.py) so that the hook settings cache, which stores each
guard's mode, and `swarmdeck guards` read the table without importing what checks a call.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from swarmdeck.config import Config


class Guard:
    """One guard: its name, when it looks, what it refuses, its mode in each preset."""

    __slots__ = ("looks_at", "name", "refuses", "remind", "strict")

    def __init__(self, name: str, looks_at: str, refuses: str, remind: str, strict: str) -> None:
        self.name = name
        self.looks_at = looks_at
        self.refuses = refuses
        self.remind = remind
        self.strict = strict

    @property
    def key(self) -> str:
        """Its key under [guards]."""
        return self.name.replace("-", "_")


GUARDS: tuple[Guard, ...] = (
    Guard("heavy-outside-cage", "Bash",
          "heavy work not run as `swarmdeck run|dispatch|peer run|gpu-run … -- CMD`",
          "remind", "deny"),
    Guard("heavy-by-subagent", "Bash",
          "heavy work started by a subagent (or by the main agent without guards.heavy_prefix)",
          "remind", "deny"),
    Guard("timer", "Bash, CronCreate",
          "`sleep N` (N >= 30 s) used as a timer, `crontab`, the CronCreate tool",
          "off", "deny"),
    Guard("wait-loop", "Bash",
          "a while/until loop that waits without `timeout`; `&` inside something in the "
          "background", "off", "deny"),
    Guard("run-scope", "Bash",
          "heavy work without a SWARMDECK_SCOPE='kind=…; what=…; scope=…; why=…' declaration",
          "off", "off"),
    Guard("subagent-limit", "Agent|Task",
          "a dispatch while hooks.max_running_subagents subagents run", "deny", "deny"),
    Guard("dispatch-lines", "Agent|Task",
          "a prompt without each of guards.dispatch_required_lines", "off", "deny"),
    Guard("dispatch-types", "Agent|Task",
          "a subagent type in guards.forbidden_subagent_types", "off", "deny"),
    Guard("thread-cap", "Agent|Task",
          "a prompt whose `thread cap:` line is missing or not this host's heavy threads",
          "off", "deny"),
    Guard("placeholders", "Agent|Task", "a prompt with an unfilled `<fill in …>`",
          "off", "deny"),
    Guard("scratch-lock", "Agent|Task",
          "a `scratch: PATH` another live subagent holds", "off", "deny"),
    Guard("write-scope", "Write|Edit|MultiEdit|NotebookEdit",
          "a write outside the globs guards.write_scopes gives the agent's type",
          "off", "deny"),
    Guard("continuation", "SendMessage",
          "a message to a subagent that has already handed back", "off", "deny"),
    Guard("handback", "SubagentStop",
          "a handback while scratch copies or build folders it made remain, without a "
          "`not deleted: PATH` line", "off", "deny"),
)
"""Every guard, in priority order."""
BY_NAME = {guard.name: guard for guard in GUARDS}


def guard_settings(config: Config) -> dict[str, Any]:
    """What the hooks need of [guards], as JSON for the settings cache: modes and facts."""
    section = config.guards
    preset = section.preset
    modes = {}
    for guard in GUARDS:
        own = getattr(section, guard.key)
        modes[guard.name] = own or (guard.strict if preset == "strict" else guard.remind)
    return {
        "preset": preset,
        "modes": modes,
        "heavy_prefix": section.heavy_prefix,
        "required_lines": list(section.dispatch_required_lines),
        "forbidden_types": list(section.forbidden_subagent_types),
        "write_scopes": list(section.write_scopes),
        "heavy_threads": heavy_threads(config),
    }


def heavy_threads(config: Config) -> int:
    """The host's registered heavy-thread count (config.heavy_thread_budget)."""
    from swarmdeck.config import heavy_thread_budget

    return heavy_thread_budget(config.cores.heavy_threads, os.cpu_count() or 1)
