"""Swarm health: dispatches, subagents running at once, and bytes added to the main context."""

from __future__ import annotations

from pathlib import Path

from claude_lines import BASE, ClaudeTree, Lines
from swarmdeck.probes.claude.sessions import SessionsProbe
from swarmdeck.probes.claude.swarm_health import (
    effective_parallelism,
    parallelism_series,
    parallelism_timeline,
)

SID = "9999eeee-0000-4000-8000-000000000005"


def test_timeline_counts_overlaps_and_back_to_back_is_not_overlap() -> None:
    timeline = parallelism_timeline([(0, 10), (5, 15), (15, 20)])
    assert timeline == ((0, 1), (5, 2), (10, 1), (15, 1), (20, 0))
    assert max(n for _, n in timeline) == 2


def test_effective_parallelism_is_agent_seconds_over_busy_seconds() -> None:
    assert effective_parallelism([(0, 10), (0, 10)]) == 2.0
    assert effective_parallelism([(0, 10), (20, 30)]) == 1.0
    assert effective_parallelism([]) == 0.0


def test_series_takes_the_peak_of_each_bucket() -> None:
    timeline = ((0.0, 1), (5.0, 3), (6.0, 1), (20.0, 0))
    assert parallelism_series(timeline, 0.0, 20.0, 4) == [1, 3, 1, 1]
    assert parallelism_series(timeline, 0.0, 0.0, 4) == []


def test_session_health_from_a_fan_out(tmp_path: Path) -> None:
    tree = ClaudeTree(tmp_path / "claude")
    main = Lines(SID)
    main.prompt("fan out", 0)
    prompts = {n: f"Do part {n}. " + "x" * (100 * (n + 1)) for n in range(3)}
    for n, prompt in prompts.items():
        main.agent(f"toolu_h{n}", f"part {n}", prompt, 10, message_id="msg_fan")
    main.foreground_done("toolu_h0", "ah0", 70, report="r" * 1000)
    main.foreground_done("toolu_h1", "ah1", 130, report="r" * 2000)
    main.foreground_done("toolu_h2", "ah2", 130, report="r" * 3000)
    main.agent("toolu_h3", "later", "Later part.", 200)
    main.foreground_done("toolu_h3", "ah3", 260)
    tree.write_main(main)
    session = SessionsProbe(tmp_path / "claude", clock=lambda: BASE + 300).refresh()[0]
    health = session.health
    assert health.dispatches == 4
    assert health.running == 0
    assert health.peak_parallel == 3
    # 60 + 120 + 120 + 60 agent-seconds over 120 + 60 busy seconds
    assert abs(health.effective_parallelism - 2.0) < 1e-6
    sizes = {s.id: s.context_bytes for s in session.subagents}
    assert sizes["ah2"] > sizes["ah1"] > sizes["ah0"] > 1000
    assert health.context_bytes_total == sum(sizes.values())
    assert health.context_bytes_max == sizes["ah2"]
    data = session.to_json()
    assert data["peak_parallel"] == 3
    assert data["parallelism_timeline"][0] == [BASE + 10, 3]


def test_running_subagents_keep_the_timeline_open() -> None:
    timeline = parallelism_timeline([(0, None), (5, 10)])
    assert timeline == ((0, 1), (5, 2), (10, 1))
