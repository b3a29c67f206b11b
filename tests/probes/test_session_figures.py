"""Per-session figures from transcript lines: each message counted once, priced at list prices."""

from __future__ import annotations

import tracemalloc
from typing import Any

import pytest

from swarmdeck.probes.claude.transcript_facts import TranscriptFacts
from swarmdeck.probes.claude.usage import (
    CONTEXT_WINDOW,
    LONG_CONTEXT_WINDOW,
    PRICES,
    LongPrompt,
    Price,
    UsageCounter,
    price_of,
    session_figures,
)


def assistant(message_id: str, model: str, at: str, **usage: int) -> dict[str, Any]:
    return {"type": "assistant", "sessionId": "s1", "timestamp": at, "message": {
        "id": message_id, "role": "assistant", "model": model,
        "content": [{"type": "text", "text": "ok"}], "usage": usage}}


def test_a_streamed_message_counts_once_with_its_last_figures() -> None:
    facts = TranscriptFacts()
    facts.feed([
        assistant("m1", "claude-sonnet-4-5", "2026-12-01T00:00:00Z", input_tokens=10,
                  cache_read_input_tokens=1000, cache_creation_input_tokens=100, output_tokens=1),
        assistant("m1", "claude-sonnet-4-5", "2026-12-01T00:00:01Z", input_tokens=10,
                  cache_read_input_tokens=1000, cache_creation_input_tokens=100, output_tokens=40),
        assistant("m2", "claude-sonnet-4-5", "2026-12-01T00:00:05Z", input_tokens=20,
                  cache_read_input_tokens=1200, output_tokens=60),
        # m1 repeated further on (a resumed transcript copies it): not counted again
        assistant("m1", "claude-sonnet-4-5", "2026-12-01T00:00:06Z", input_tokens=10,
                  cache_read_input_tokens=1000, cache_creation_input_tokens=100, output_tokens=40),
    ])
    agent = TranscriptFacts(agent_file=True)
    agent.feed([assistant("m9", "claude-haiku-4-5-20251001", "2026-12-01T00:00:03Z",
                          input_tokens=500, output_tokens=100)])
    figures = session_figures([facts.usage.by_model, agent.usage.by_model], facts.model,
                              facts.context_input, facts.last_answer_at)
    assert (figures.tokens_in, figures.tokens_out) == (530, 200)
    assert (figures.cache_read_tokens, figures.cache_write_tokens) == (2200, 100)
    sonnet, haiku = price_of("claude-sonnet-4-5"), price_of("claude-haiku-4-5-20251001")
    assert sonnet is not None and haiku is not None
    expected = (30 * sonnet.input + 100 * sonnet.output + 2200 * sonnet.cache_read
                + 100 * sonnet.cache_write + 500 * haiku.input + 100 * haiku.output) / 1e6
    assert figures.cost_usd == pytest.approx(expected)
    assert figures.model == "claude-sonnet-4-5"
    assert figures.context_tokens == 1010 + 100  # the last line read: m1's repeat
    assert figures.context_window == CONTEXT_WINDOW
    assert figures.to_json()["last_answer_at"] == facts.last_answer_at


def test_an_unpriced_model_has_no_cost_and_a_long_turn_a_long_window() -> None:
    facts = TranscriptFacts()
    facts.feed([assistant("m1", "claude-unknown-9", "2026-12-01T00:00:00Z",
                         input_tokens=10, cache_read_input_tokens=300_000, output_tokens=5)])
    figures = session_figures([facts.usage.by_model], facts.model, facts.context_input,
                              facts.last_answer_at)
    assert figures.cost_usd is None
    assert figures.context_window == LONG_CONTEXT_WINDOW
    assert figures.context_fill == pytest.approx(300_010 / LONG_CONTEXT_WINDOW)


def test_every_price_prefix_is_reachable() -> None:
    """A prefix listed after a shorter one it extends would never be used."""
    prefixes = [prefix for prefix, _ in PRICES]
    for index, prefix in enumerate(prefixes):
        assert not any(prefix.startswith(earlier) for earlier in prefixes[:index]), prefix


def test_a_line_added_to_a_subagents_file_adds_to_its_sessions_figures(tmp_path) -> None:
    import json

    from swarmdeck.probes.claude.sessions import SessionsProbe

    project = tmp_path / "projects" / "-work"
    agents = project / "s1" / "subagents"
    agents.mkdir(parents=True)
    main = project / "s1.jsonl"
    agent = agents / "agent-a1.jsonl"

    def write(path, *records) -> None:
        with path.open("a") as out:
            out.writelines(json.dumps(r) + "\n" for r in records)

    write(main, assistant("m1", "claude-sonnet-4-5", "2026-12-01T00:00:00Z", input_tokens=10,
                          output_tokens=1))
    write(agent, {**assistant("m2", "claude-haiku-4-5", "2026-12-01T00:00:01Z",
                              input_tokens=100, output_tokens=10), "agentId": "a1",
                  "isSidechain": True})
    probe = SessionsProbe(tmp_path)
    [session] = probe.refresh()
    assert (session.figures.tokens_in, session.figures.tokens_out) == (110, 11)
    write(main, assistant("m3", "claude-sonnet-4-5", "2026-12-01T00:00:02Z", input_tokens=5,
                          output_tokens=1))
    [session] = probe.refresh([main])
    assert (session.figures.tokens_in, session.figures.tokens_out) == (115, 12)
    write(agent, {**assistant("m4", "claude-haiku-4-5", "2026-12-01T00:00:03Z",
                              input_tokens=1000, output_tokens=100), "agentId": "a1",
                  "isSidechain": True})
    [session] = probe.refresh([agent])
    assert (session.figures.tokens_in, session.figures.tokens_out) == (1115, 112)


@pytest.mark.parametrize(
    "model, listed",
    [
        # platform.claude.com's overview page of each model, read on 2026-12-05.
        ("claude-opus-5-5", Price(4.0, 5.0, 0.20, 20.0)),
        ("claude-sonnet-5-5", Price(2.0, 2.5, 0.20, 10.0)),
        ("claude-sonnet-5-5-20261001", Price(2.0, 2.5, 0.20, 10.0)),
        ("claude-fable-5-1", Price(10.0, 12.5, 0.25, 50.0)),
        ("claude-opus-5", Price(5.0, 6.25, 0.50, 25.0)),
        # Its input is priced by prompt length: up to 100,000 tokens, and over.
        ("claude-haiku-5-5", Price(0.10, 0.125, 0.01, 0.50,
                                   LongPrompt(100_000, Price(0.50, 0.625, 0.05, 2.50)))),
    ],
)
def test_the_current_models_cost_what_their_pages_list(model: str, listed: Price) -> None:
    assert price_of(model) == listed


def test_a_turn_over_the_long_prompt_line_costs_the_long_rates_on_every_token() -> None:
    """Haiku 5.5: a request whose prompt (input, cache reads and writes) is over 100,000
    tokens pays the higher rates on all its tokens, output included; one at 100,000 does not.
    Each turn is priced on its own, in the main file and in a subagent's alike."""
    facts = TranscriptFacts()
    facts.feed([
        assistant("m1", "claude-haiku-5-5", "2026-12-01T00:00:00Z", input_tokens=1_000,
                  cache_read_input_tokens=50_000, cache_creation_input_tokens=2_000,
                  output_tokens=300),
        # Streamed: its first line was short, its last one is over the line.
        assistant("m2", "claude-haiku-5-5", "2026-12-01T00:00:01Z", input_tokens=2_000,
                  output_tokens=1),
        assistant("m2", "claude-haiku-5-5", "2026-12-01T00:00:02Z", input_tokens=2_000,
                  cache_read_input_tokens=120_000, cache_creation_input_tokens=1_000,
                  output_tokens=500),
        assistant("m3", "claude-haiku-5-5", "2026-12-01T00:00:03Z", input_tokens=10_000,
                  cache_read_input_tokens=90_000, output_tokens=100),
    ])
    agent = TranscriptFacts(agent_file=True)
    agent.feed([assistant("a1", "claude-haiku-5-5", "2026-12-01T00:00:04Z",
                          input_tokens=150_000, output_tokens=10)])
    figures = session_figures([facts.usage.by_model, agent.usage.by_model], facts.model,
                              facts.context_input, facts.last_answer_at)
    short = (1_000 * 0.10 + 50_000 * 0.01 + 2_000 * 0.125 + 300 * 0.50
             + 10_000 * 0.10 + 90_000 * 0.01 + 100 * 0.50)
    long = (2_000 * 0.50 + 120_000 * 0.05 + 1_000 * 0.625 + 500 * 2.50
            + 150_000 * 0.50 + 10 * 2.50)
    assert figures.cost_usd == pytest.approx((short + long) / 1e6)
    assert (figures.tokens_in, figures.tokens_out) == (163_000, 910)
    assert (figures.cache_read_tokens, figures.cache_write_tokens) == (260_000, 3_000)


def test_a_long_transcripts_message_ids_cost_a_few_bytes_each() -> None:
    """A counter remembers every message id it counted, for as long as the control room follows
    the transcript (a repeat further on is not counted again): eight bytes an id, not a set's
    slot and the id's string (the control room's memory grew with each main transcript's
    length, bench/results/app.md)."""
    counter = UsageCounter()
    messages = [{"id": f"msg_01{n:024d}", "model": "claude-sonnet-4-5",
                 "usage": {"input_tokens": 1}} for n in range(4000)]
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for message in messages:
            counter.add(message)
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    for message in messages[::7]:
        counter.add(message)
    assert counter.by_model == {("claude-sonnet-4-5", False): [4000, 0, 0, 0]}
    assert held <= 12 * len(messages)
