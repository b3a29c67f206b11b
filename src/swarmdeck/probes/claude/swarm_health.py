"""Swarm health of one main session: how much it really runs in parallel, and at what cost.

Dispatching ten subagents is not running ten at once: each dispatch's prompt and report land in
the main agent's context, and a main agent whose context fills up dispatches in smaller waves.
These figures show it: dispatches made, subagents running at once over time (and the effective
parallelism, agent-seconds over busy wall-seconds), and the bytes each dispatch added to the
main context.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from swarmdeck.probes.claude.subagents import RUNNING, SubagentInfo

TIMELINE_POINTS = 200
"""The newest change points kept in the JSON form of a timeline."""


@dataclass(frozen=True)
class SwarmHealth:
    """Parallelism and main-context pressure of one main session."""

    dispatches: int
    """Agent/Task calls made by the main agent itself."""
    nested_dispatches: int
    """Agent/Task calls made by subagents."""
    running: int
    peak_parallel: int
    effective_parallelism: float
    """Subagent-seconds divided by the wall-seconds in which at least one subagent ran."""
    timeline: tuple[tuple[float, int], ...]
    """(time, subagents running from then on), one point per change."""
    context_bytes_total: int
    """Bytes the main agent's dispatches put into its context: prompts, reports, notices."""
    context_bytes_max: int
    main_context_tokens: int | None
    """The main agent's context size at its latest answer."""

    @property
    def context_bytes_mean(self) -> float:
        return self.context_bytes_total / self.dispatches if self.dispatches else 0.0

    def to_json(self) -> dict[str, object]:
        return {
            "dispatches": self.dispatches,
            "nested_dispatches": self.nested_dispatches,
            "running_subagents": self.running,
            "peak_parallel": self.peak_parallel,
            "effective_parallelism": round(self.effective_parallelism, 3),
            "parallelism_timeline": [list(p) for p in self.timeline[-TIMELINE_POINTS:]],
            "context_bytes_total": self.context_bytes_total,
            "context_bytes_mean": round(self.context_bytes_mean, 1),
            "context_bytes_max": self.context_bytes_max,
            "main_context_tokens": self.main_context_tokens,
        }


def swarm_health(
    subagents: Sequence[SubagentInfo], main_context_tokens: int | None, now: float
) -> SwarmHealth:
    """The health figures of one session from its subagents."""
    top = [s for s in subagents if s.dispatched and s.parent_id is None]
    nested = [s for s in subagents if s.dispatched and s.parent_id is not None]
    intervals: list[tuple[float, float | None]] = []
    for agent in subagents:
        if agent.started_at is None:
            continue
        end = None if agent.status == RUNNING else (agent.ended_at or agent.last_activity_at)
        if end is not None and end < agent.started_at:
            end = agent.started_at
        intervals.append((agent.started_at, end))
    timeline = parallelism_timeline(intervals)
    closed = [(start, now if end is None else max(start, end)) for start, end in intervals]
    sizes = [s.context_bytes for s in top]
    return SwarmHealth(
        dispatches=len(top),
        nested_dispatches=len(nested),
        running=sum(1 for s in subagents if s.status == RUNNING),
        peak_parallel=max((n for _, n in timeline), default=0),
        effective_parallelism=effective_parallelism(closed),
        timeline=timeline,
        context_bytes_total=sum(sizes),
        context_bytes_max=max(sizes, default=0),
        main_context_tokens=main_context_tokens,
    )


def parallelism_timeline(
    intervals: Sequence[tuple[float, float | None]],
) -> tuple[tuple[float, int], ...]:
    """Change points of how many intervals are open (end None: still open, so the last level
    holds until now); an interval ending as another starts at the same instant is no overlap."""
    events: list[tuple[float, int]] = []
    for start, end in intervals:
        events.append((start, 1))
        if end is not None:
            events.append((end, -1))
    events.sort(key=lambda e: (e[0], e[1]))
    points: list[tuple[float, int]] = []
    running = 0
    for at, delta in events:
        running += delta
        if points and points[-1][0] == at:
            points[-1] = (at, running)
        else:
            points.append((at, running))
    return tuple(points)


def effective_parallelism(intervals: Sequence[tuple[float, float]]) -> float:
    """Agent-seconds over the wall-seconds covered by at least one agent."""
    work = sum(end - start for start, end in intervals)
    covered = 0.0
    current_start: float | None = None
    current_end = 0.0
    for start, end in sorted(intervals):
        if current_start is None or start > current_end:
            if current_start is not None:
                covered += current_end - current_start
            current_start, current_end = start, end
        else:
            current_end = max(current_end, end)
    if current_start is not None:
        covered += current_end - current_start
    return work / covered if covered > 0 else 0.0


def parallelism_series(
    timeline: Sequence[tuple[float, int]], start: float, end: float, buckets: int
) -> list[int]:
    """The most subagents running at once in each of `buckets` equal slices of [start, end]:
    what a sparkline draws."""
    if buckets <= 0 or end <= start:
        return []
    width = (end - start) / buckets
    series = [0] * buckets
    level = 0
    index = 0
    points = list(timeline)
    while index < len(points) and points[index][0] <= start:
        level = points[index][1]
        index += 1
    for bucket in range(buckets):
        bucket_end = start + (bucket + 1) * width
        peak = level
        while index < len(points) and points[index][0] < bucket_end:
            level = points[index][1]
            peak = max(peak, level)
            index += 1
        series[bucket] = peak
    return series
