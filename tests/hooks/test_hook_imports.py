"""The hook path imports neither textual nor asyncssh (nor rich); the light path not even config."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from claude_lines import bash_payload, hook_payload
from swarmdeck.cache_settle import SETTLE_NS
from waiting import wait_for

SWARMDECK = Path(sys.executable).parent / "swarmdeck"

NEVER = {"textual", "asyncssh", "rich"}
HEAVY_FOR_A_LIGHT_CALL = {
    "dataclasses", "inspect", "sqlite3", "_sqlite3", "tomllib", "typing",
    "argparse", "pathlib", "importlib", "shlex", "datetime",
}
"""Modules whose import alone costs a light hook a large part of its budget. (signal and json,
with the enum, re and collections they bring, are taken: the hook reads its input with json.)"""
SIGNAL_MODULES = {
    "signal", "enum", "types", "functools", "_functools", "collections", "_collections",
    "operator", "_operator", "keyword", "itertools", "reprlib",
}
"""The public signal module, which the hook's deadline uses, and what it imports."""
JSON_MODULES = {
    "json", "json.decoder", "json.encoder", "json.scanner", "_json", "re", "re._casefix",
    "re._compiler", "re._constants", "re._parser", "_sre", "copyreg", "collections.abc",
}
"""json, and what it imports beyond signal's modules (collections.abc: `Sequence`, cli's)."""
LIGHT_EXTRAS = {"__future__", *SIGNAL_MODULES, *JSON_MODULES}
"""What a light call may load beyond a bare interpreter besides swarmdeck's own modules: the
module behind `from __future__ import annotations`, signal's and json's."""


def _imported(argv: list[str], stdin: bytes) -> set[str]:
    """The modules `python -X importtime ARGV` imports, by full name."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", *argv],
        input=stdin,
        capture_output=True,
        timeout=60,
        check=True,
    )
    names = set()
    for line in done.stderr.decode().splitlines():
        if line.startswith("import time:") and "|" in line:
            name = line.rsplit("|", 1)[1].strip()
            if name != "imported package":
                names.add(name)
    return names


def _settled_config() -> None:
    """Wait until the config file changed longer ago than the settings cache must be newer than
    it (cache_settle.py): a cache the first call writes then serves the next."""
    status = os.stat(os.environ["SWARMDECK_CONFIG"])
    changed = max(status.st_mtime_ns, status.st_ctime_ns)
    wait_for(lambda: time.time_ns() > changed + SETTLE_NS, timeout=SETTLE_NS / 1e9 + 30)


def _modules(event: str, payload: dict) -> set[str]:
    """Every module the real console script imports, with each package's top-level name."""
    names = _imported([str(SWARMDECK), "hook", event], json.dumps(payload).encode())
    assert "swarmdeck.hooks.entry" in names
    return {name.split(".")[0] for name in names} | names


def test_light_path_imports_only_what_it_needs() -> None:
    _settled_config()
    first = _modules("pre-tool-use", bash_payload("ls -la"))
    assert "swarmdeck.config" in first  # the first call builds the settings cache and the store
    modules = _modules("pre-tool-use", bash_payload("ls -la"))
    assert not modules & NEVER
    assert "swarmdeck.config" not in modules
    assert "swarmdeck.state" not in modules
    assert "dataclasses" not in modules
    assert "pathlib" not in modules
    assert "typing" not in modules
    assert "tree_sitter" not in modules  # the prefilter clears it without the shell parser
    assert "swarmdeck.hooks.shell_parse" not in modules  # nor its tables, only a heavy match's


def test_light_call_loads_nothing_a_bare_interpreter_does_not_beyond_swarmdeck() -> None:
    payload = bash_payload("git status --short && ls -la src")
    _settled_config()
    _modules("pre-tool-use", payload)  # the first call builds the settings cache and the store
    bare = _imported(["-c", "pass"], b"")
    extra = _modules("pre-tool-use", payload) - bare
    assert not extra & HEAVY_FOR_A_LIGHT_CALL, sorted(extra & HEAVY_FOR_A_LIGHT_CALL)
    assert {name for name in extra if name.split(".")[0] != "swarmdeck"} <= LIGHT_EXTRAS, sorted(
        extra
    )


def test_heavy_and_session_start_paths_import_no_ui_or_ssh() -> None:
    heavy = _modules("pre-tool-use", bash_payload("pytest -q"))
    start = _modules("session-start", hook_payload("SessionStart", source="compact"))
    guard = _modules(
        "pre-tool-use",
        hook_payload("PreToolUse", tool_name="Agent", tool_input={"prompt": "p"}),
    )
    assert "swarmdeck.hooks.bash_reminder" in heavy
    assert "swarmdeck.hooks.session_start" in start
    for modules in (heavy, start, guard):
        assert not modules & NEVER
        assert not modules & WHOLE_CLAUDE_CLUSTER
    assert not {name for name in heavy if name.startswith("swarmdeck.probes.claude.")}


WHOLE_CLAUDE_CLUSTER = {
    "swarmdeck.probes.claude.sessions_watch",
    "watchfiles",
}
"""Parts of probes/claude/ only the app needs: a hook importing them has pulled in the cluster."""
