"""`enter` on a Watchdog finding or an Alerts row opens its detail view: the whole message and
the ready-made command, however long, wrapped to the width, never cut."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from fixed_room import fixed_app
from pilot_waits import probed, until
from rendered import plain
from textual.widgets import Static

from swarmdeck.app.record_detail import AlertDetail, FindingDetail
from swarmdeck.probes.store_rows import Alert

COMMAND = ("swarmdeck peer run loopback --cap 4G --label 'integration suite (queued)' -- "
           "pytest -x tests/integration --maxfail 3 --durations 20")
MESSAGE = f"'integration suite (queued)' queues on vm for memory; loopback fits it now: {COMMAND}"


def squeezed(text: str) -> str:
    return "".join(text.split())


async def test_enter_on_a_finding_shows_its_whole_message_and_advice(isolated_home: Path) -> None:
    app = fixed_app(isolated_home, watched=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await probed(pilot)
        finding = app.snapshot.findings[0]
        await pilot.press("6", "enter")
        await until(pilot, lambda: isinstance(app.screen, FindingDetail), "the finding's detail")
        await pilot.pause()
        shown = plain(app.screen.query_one("#record-facts", Static).content)
        assert squeezed(finding.message) in squeezed(shown)
        assert squeezed(finding.advice or "") in squeezed(shown)
        assert finding.rule in shown and finding.subject in shown
        await pilot.press("escape")
        assert not isinstance(app.screen, FindingDetail)


async def test_enter_on_an_alert_shows_its_whole_message_and_command(isolated_home: Path) -> None:
    app = fixed_app(isolated_home, watched=True)
    room = app.prober()
    alert = Alert(9, "peer-fits:loopback:f00d", "info", "runner", "loopback", MESSAGE,
                  room.taken_at - 60, room.taken_at - 30, 2, None)
    app.prober = lambda: dataclasses.replace(room, alerts=[alert])
    async with app.run_test(size=(80, 24)) as pilot:
        await probed(pilot)
        await pilot.press("7", "enter")
        await until(pilot, lambda: isinstance(app.screen, AlertDetail), "the alert's detail")
        await pilot.pause()
        shown = plain(app.screen.query_one("#record-facts", Static).content, width=80)
        assert squeezed(MESSAGE) in squeezed(shown)
        [command_line] = [line for line in shown.splitlines() if "command" in line.split()[:1]]
        assert COMMAND.startswith(command_line.split("command", 1)[1].strip())


def test_advice_that_is_only_a_command_is_shown_once_as_the_command() -> None:
    from swarmdeck.app.record_detail import finding_facts
    from swarmdeck.probes.store_rows import Finding

    finding = Finding(1, "k", "queued_while_peer_fits", "job #5", "info", "queued here", 0.0,
                      0.0, 3, None, advice=f"`{COMMAND}`")
    shown = finding_facts(finding, 10.0, 200).plain
    assert "advice" not in shown and squeezed(COMMAND) in squeezed(shown)
    assert shown.count("swarmdeck peer run") == 1


def _facts(shown: str) -> dict[str, list[str]]:
    """A detail's lines by fact name (a name may come more than once: commands)."""
    facts: dict[str, list[str]] = {}
    for line in shown.splitlines():
        name, _, value = line.strip().partition("  ")
        if name.strip():
            facts.setdefault(name.strip(), []).append(value.strip())
    return facts


def test_a_finding_about_a_process_shows_the_command_that_asks_for_its_kill() -> None:
    from swarmdeck.app.record_detail import finding_facts
    from swarmdeck.probes.store_rows import Finding

    finding = Finding(24, "k", "output_not_growing", "job #25 bg1", "warning",
                      "its output has not grown for 21m", 0.0, 0.0, 3, None, job_id=25,
                      pid=4343, start_ticks=7,
                      advice="look at /state/job-25.out; request a kill if it is stuck")
    facts = _facts(finding_facts(finding, 10.0, 200).plain)
    assert facts["command"] == ["swarmdeck kills --request 24"], facts


def test_a_finding_that_names_no_process_offers_no_kill_command() -> None:
    from swarmdeck.app.record_detail import finding_facts
    from swarmdeck.probes.store_rows import Finding

    finding = Finding(5, "k", "idle_with_work_in_flight", "session 180d292f", "warning",
                      "no activity for 12m", 0.0, 0.0, 3, None, advice="look at the session")
    shown = finding_facts(finding, 10.0, 200).plain
    assert "kills --request" not in shown and "command" not in _facts(shown), shown


def test_a_findings_count_is_said_as_the_watchdog_passes_that_saw_it() -> None:
    """The count goes up once a pass: said as passes, never as times it happened."""
    from swarmdeck.app.record_detail import finding_facts
    from swarmdeck.probes.store_rows import Finding

    finding = Finding(5, "k", "idle_with_work_in_flight", "session 180d292f", "warning",
                      "no activity for 12m", 100.0, 960.0, 473, None, fired_at=160.0)
    facts = _facts(finding_facts(finding, 1000.0, 200).plain)
    assert facts["seen"] == ["in 473 watchdog passes, the last 40s ago"], facts
