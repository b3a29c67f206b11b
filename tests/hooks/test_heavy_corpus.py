"""The hook corpus (tests/hooks/corpus/commands.txt): every heavy command caught, no light one
touched, and the prefilter never calls light what the parser would not.

Each line is judged as the strict preset judges it, from the corpus folder (where the scripts it
names live). Recall and precision of the heavy verdict are printed for the notes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from swarmdeck.config import default_config, parse_config
from swarmdeck.hooks.entry import _user_literals
from swarmdeck.hooks.guard_table import guard_settings
from swarmdeck.hooks.guards import Finding, bash_findings
from swarmdeck.hooks.heavy import certainly_light
from swarmdeck.hooks.payload import HookInput
from swarmdeck.hooks.settings import HookSettings

CORPUS = Path(__file__).parent / "corpus"


def _decode(text: str) -> str:
    out, index = [], 0
    while index < len(text):
        if text[index] == "\\" and index + 1 < len(text):
            out.append("\n" if text[index + 1] == "n" else text[index + 1])
            index += 2
        else:
            out.append(text[index])
            index += 1
    return "".join(out)


def corpus() -> list[tuple[str, str]]:
    rows = []
    for line in (CORPUS / "commands.txt").read_text().splitlines():
        if not line or line.startswith("#"):
            continue
        expected, command = line.split("\t", 1)
        rows.append((expected, _decode(command)))
    return rows


def strict_settings() -> HookSettings:
    config = parse_config('[guards]\npreset = "strict"\n', "strict.toml")
    return HookSettings((), (), 0, tuple(config.hooks.heavy), guard_settings(config))


def verdict(command: str, settings: HookSettings) -> str:
    hook = HookInput("PreToolUse", {"cwd": str(CORPUS), "tool_name": "Bash",
                                    "tool_input": {"command": command}})
    findings, _hits = bash_findings(hook, command, settings)
    if not findings:
        return "light"
    return "remind" if findings[0].remind_only else findings[0].guard


ROWS = corpus()


def test_the_corpus_is_large_enough_and_holds_every_kind() -> None:
    kinds = {expected for expected, _ in ROWS}
    assert len(ROWS) >= 300
    assert {"heavy-outside-cage", "light", "timer", "wait-loop", "remind"} <= kinds


def test_every_heavy_command_is_caught_and_no_light_one_touched() -> None:
    settings = strict_settings()
    wrong = []
    caught = flagged = heavy = 0
    for expected, command in ROWS:
        got = verdict(command, settings)
        is_heavy = expected == "heavy-outside-cage"
        heavy += is_heavy
        flagged += got == "heavy-outside-cage"
        caught += is_heavy and got == "heavy-outside-cage"
        if got != expected:
            wrong.append(f"{expected} -> {got}: {command!r}")
    recall = caught / heavy
    precision = caught / flagged if flagged else 1.0
    print(f"corpus: {len(ROWS)} commands, {heavy} heavy; recall {recall:.3f}, "
          f"precision {precision:.3f}")
    assert not wrong, "\n".join(wrong)


def remind_settings() -> HookSettings:
    config = parse_config("", "remind.toml")
    return HookSettings((), (), 0, tuple(config.hooks.heavy), guard_settings(config))


@pytest.mark.parametrize("expected,command", ROWS)
def test_the_prefilter_never_calls_light_what_the_parser_would_not(
    expected: str, command: str
) -> None:
    settings = strict_settings()
    if certainly_light(command, settings.heavy, _user_literals(settings)):
        assert verdict(command, settings) == "light", command


@pytest.mark.parametrize("expected,command", ROWS)
def test_without_waiting_guards_the_prefilter_never_calls_light_what_the_parser_would_not(
    expected: str, command: str
) -> None:
    """The remind preset (timer and wait-loop off): the prefilter runs with waits=False, as
    entry.py calls it, and skips sleeps, loops and `&`; nothing it calls light may be a case
    of a guard that is on."""
    settings = remind_settings()
    modes = settings.guards["modes"]
    assert modes["timer"] == "off" and modes["wait-loop"] == "off"
    if certainly_light(command, settings.heavy, _user_literals(settings), waits=False):
        assert verdict(command, settings) == "light", command


def _refusing(command: str, settings: HookSettings, **more: str) -> list[Finding]:
    hook = HookInput("PreToolUse", {"cwd": str(CORPUS), "tool_name": "Bash",
                                    "tool_input": {"command": command}, **more})
    findings, _hits = bash_findings(hook, command, settings)
    return [f for f in findings if not f.remind_only]


@pytest.mark.parametrize("agent", [{}, {"agent_id": "a-sub", "agent_type": "reviewer"}],
                         ids=["main", "subagent"])
def test_every_deny_suggests_a_form_that_passes_or_names_every_refusing_guard(
    agent: dict[str, str]
) -> None:
    """The form a deny suggests is allowed as it stands (run by the main agent); where no form
    can be (`sleep 60; pytest`: the sleep itself is refused), the reason says every refusing
    guard's reason."""
    settings = strict_settings()
    passing = named = 0
    for _expected, command in ROWS:
        refusing = _refusing(command, settings, **agent)
        if not refusing or not refusing[0].form:
            continue
        first = refusing[0]
        again = _refusing(first.form, settings)
        if not again:
            passing += 1
            continue
        reason = first.reason("deny")
        for finding in [*refusing[1:], *again]:
            assert f"{finding.guard}: {finding.refused}" in reason, (command, reason)
        named += 1
    print(f"forms: {passing} pass as they stand, {named} name every refusing guard")
    assert passing > 0


def test_default_settings_see_the_same_heavy_list() -> None:
    assert tuple(default_config().hooks.heavy) == strict_settings().heavy
