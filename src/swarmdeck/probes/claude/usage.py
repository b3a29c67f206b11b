"""Per-session figures: tokens in and out, cache reads and writes, cost, context fill.

The tokens come from the `usage` of each assistant message in the transcripts, main file and
subagent files alike (a subagent's tokens are written only in its own file). One message is
streamed as several lines that share `message.id` and repeat its usage; it is counted once,
with the figures of its last line. The transcript facts add each line as it is read
(`UsageCounter`), so the figures cost nothing beyond the incremental read the transcripts
already get.

`PRICES` is the one table of prices: Anthropic's list prices in USD per million tokens, as
published on its pricing page (platform.claude.com/docs/en/about-claude/pricing) and each
model's overview page on `PRICES_DATE`; the 5-minute cache write rate is the one Claude Code's
cache uses. A model the table does not name has no cost: the figure says "unpriced" rather than
guess. A model priced by prompt length (`LongPrompt`) has each turn counted in its own tier, so
the cost of a turn over the line is exact without keeping the turns.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from swarmdeck.probes.claude.digest_set import DigestSet

PRICES_DATE = "2026-12-05"
"""When `PRICES` was copied from the list prices."""


@dataclass(frozen=True)
class LongPrompt:
    """A higher tier of a model's prices: a request whose prompt (its input, cache reads and
    cache writes) is over `above` tokens pays `price` on every token, its output included."""

    above: int
    price: Price


@dataclass(frozen=True)
class Price:
    """USD per million tokens."""

    input: float
    cache_write: float
    cache_read: float
    output: float
    long_prompt: LongPrompt | None = None
    """The rates of a request whose prompt is over a line, where the model has such a tier."""


PRICES: tuple[tuple[str, Price], ...] = (
    ("claude-fable-5-1", Price(10.0, 12.5, 0.25, 50.0)),
    ("claude-mythos-5-1", Price(10.0, 12.5, 0.25, 50.0)),
    ("claude-fable-5", Price(10.0, 12.5, 1.0, 50.0)),
    ("claude-mythos-5", Price(10.0, 12.5, 1.0, 50.0)),
    ("claude-opus-5-5", Price(4.0, 5.0, 0.20, 20.0)),
    ("claude-opus-5", Price(5.0, 6.25, 0.50, 25.0)),
    ("claude-opus-4-8", Price(5.0, 6.25, 0.50, 25.0)),
    ("claude-opus-4-7", Price(5.0, 6.25, 0.50, 25.0)),
    ("claude-opus-4-6", Price(5.0, 6.25, 0.50, 25.0)),
    ("claude-opus-4-5", Price(5.0, 6.25, 0.50, 25.0)),
    ("claude-opus-4", Price(15.0, 18.75, 1.50, 75.0)),
    ("claude-sonnet-5-5", Price(2.0, 2.5, 0.20, 10.0)),
    ("claude-sonnet-5", Price(2.0, 2.5, 0.20, 10.0)),
    ("claude-sonnet-4", Price(3.0, 3.75, 0.30, 15.0)),
    ("claude-3-7-sonnet", Price(3.0, 3.75, 0.30, 15.0)),
    ("claude-haiku-5-5", Price(0.10, 0.125, 0.01, 0.50,
                               LongPrompt(100_000, Price(0.50, 0.625, 0.05, 2.50)))),
    ("claude-haiku-4-5", Price(1.0, 1.25, 0.10, 5.0)),
    ("claude-3-5-haiku", Price(0.80, 1.0, 0.08, 4.0)),
)
"""Model id prefixes and their list prices; the first prefix a model id starts with wins, so a
longer prefix comes before a shorter one it extends."""

CONTEXT_WINDOW = 200_000
LONG_CONTEXT_WINDOW = 1_000_000
"""The 1M-token window (a `[1m]` model, or one whose turn already went past 200k)."""


@lru_cache(maxsize=256)
def price_of(model: str | None) -> Price | None:
    """The list price of a model id, by the first prefix of `PRICES` it starts with; None when
    unpriced. Kept per id: the usage counter asks once per assistant message."""
    if not model:
        return None
    for prefix, price in PRICES:
        if model.startswith(prefix):
            return price
    return None


def context_window(model: str | None, context_tokens: int | None) -> int:
    if (model and "[1m]" in model) or (context_tokens or 0) > CONTEXT_WINDOW:
        return LONG_CONTEXT_WINDOW
    return CONTEXT_WINDOW


UsageKey = tuple[str, bool]
"""A model id, and whether the turns counted under it had a prompt over the model's
`LongPrompt` line (always False for a model without one)."""


def over_long_prompt(model: str, figures: list[int]) -> bool:
    """True when a turn of `model` with these [input, output, cache_read, cache_write] tokens
    is priced at its model's long-prompt tier."""
    price = price_of(model)
    if price is None or price.long_prompt is None:
        return False
    return figures[0] + figures[2] + figures[3] > price.long_prompt.above


class UsageCounter:
    """The tokens of one transcript file by model and price tier, each message counted once.

    Lines of one message come one after another; a message id met again later (a repeat of an
    earlier message) is not counted twice either: every id counted is remembered, by its
    digest (DigestSet), for as long as the transcript is followed.
    """

    __slots__ = ("_last", "_last_id", "_seen", "by_model")

    def __init__(self) -> None:
        self.by_model: dict[UsageKey, list[int]] = {}
        """(model, over its long-prompt line) -> [input, output, cache_read, cache_write]"""
        self._last_id: str | None = None
        self._last: tuple[UsageKey, list[int]] | None = None
        self._seen = DigestSet()

    def add(self, message: dict[str, Any]) -> None:
        """Count an assistant message's usage (a later line of the same message replaces it)."""
        usage = message.get("usage")
        if not isinstance(usage, dict):
            return
        figures = [_int(usage.get("input_tokens")), _int(usage.get("output_tokens")),
                   _int(usage.get("cache_read_input_tokens")),
                   _int(usage.get("cache_creation_input_tokens"))]
        model = message.get("model")
        model = model if isinstance(model, str) and model else "?"
        key = (model, over_long_prompt(model, figures))
        message_id = message.get("id")
        if isinstance(message_id, str) and message_id:
            if message_id == self._last_id and self._last is not None:
                self._apply(*self._last, -1)
            elif message_id in self._seen:
                return
            else:
                self._seen.add(message_id)
            self._last_id = message_id
        else:
            self._last_id = None
        self._last = (key, figures)
        self._apply(key, figures, 1)

    def _apply(self, key: UsageKey, figures: list[int], sign: int) -> None:
        counts = self.by_model.get(key)
        if counts is None:
            counts = self.by_model[key] = [0, 0, 0, 0]
        for index, value in enumerate(figures):
            counts[index] += sign * value


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


@dataclass(frozen=True)
class SessionFigures:
    """What a session used, its subagents included, and how full its main context is."""

    tokens_in: int
    """Input tokens not read from the cache nor written to it."""
    tokens_out: int
    cache_read_tokens: int
    cache_write_tokens: int
    cost_usd: float | None
    """At list prices (`PRICES`); None when a model used has no price there."""
    context_tokens: int | None
    """The main thread's latest turn's input: what its context holds now."""
    context_window: int
    model: str | None
    """The main thread's latest model."""
    last_answer_at: float | None
    """When the main thread last answered (its latest assistant line)."""

    @property
    def context_fill(self) -> float | None:
        if self.context_tokens is None:
            return None
        return self.context_tokens / self.context_window

    def to_json(self) -> dict[str, Any]:
        return {
            "tokens_in": self.tokens_in,
            "tokens_out": self.tokens_out,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens,
            "cost_usd": None if self.cost_usd is None else round(self.cost_usd, 6),
            "prices_date": PRICES_DATE,
            "model": self.model,
            "context_tokens": self.context_tokens,
            "context_window": self.context_window,
            "context_fill": None if self.context_fill is None else round(self.context_fill, 4),
            "last_answer_at": self.last_answer_at,
        }


NO_FIGURES = SessionFigures(0, 0, 0, 0, 0.0, None, CONTEXT_WINDOW, None, None)


def summed_usage(counters: Iterable[UsageCounter]) -> dict[UsageKey, list[int]]:
    """The counters' tokens by model and tier, added up."""
    return _summed(counter.by_model for counter in counters)


def added_usage(parts: Iterable[Mapping[UsageKey, list[int]]]) -> dict[UsageKey, list[int]]:
    """Tokens by model and price tier (`UsageCounter.by_model`, or sums of them), added up."""
    return _summed(parts)


def _summed(parts: Iterable[Mapping[UsageKey, list[int]]]) -> dict[UsageKey, list[int]]:
    by_model: dict[UsageKey, list[int]] = {}
    for part in parts:
        for name, counts in part.items():
            known = by_model.get(name)
            if known is None:
                by_model[name] = list(counts)
            else:
                known[0] += counts[0]
                known[1] += counts[1]
                known[2] += counts[2]
                known[3] += counts[3]
    return by_model


def session_figures(
    parts: Iterable[Mapping[UsageKey, list[int]]],
    model: str | None,
    context_tokens: int | None,
    last_answer_at: float | None,
) -> SessionFigures:
    """The figures of a session from its files' tokens by model and tier
    (`UsageCounter.by_model`, or `summed_usage` of several) and its main thread's latest turn."""
    by_model = _summed(parts)
    totals = [0, 0, 0, 0]
    cost: float | None = 0.0
    for (name, long), counts in by_model.items():
        for index in range(4):
            totals[index] += counts[index]
        if not any(counts):
            continue
        price = price_of(name)
        if price is None or cost is None:
            cost = None
            continue
        if long and price.long_prompt is not None:
            price = price.long_prompt.price
        cost += (counts[0] * price.input + counts[1] * price.output
                 + counts[2] * price.cache_read + counts[3] * price.cache_write) / 1e6
    return SessionFigures(
        tokens_in=totals[0],
        tokens_out=totals[1],
        cache_read_tokens=totals[2],
        cache_write_tokens=totals[3],
        cost_usd=cost,
        context_tokens=context_tokens,
        context_window=context_window(model, context_tokens),
        model=model,
        last_answer_at=last_answer_at,
    )


def turn_input(usage: Any) -> int | None:
    """A turn's whole input: fresh, cache read and cache written (what its context held)."""
    if not isinstance(usage, dict):
        return None
    keys = ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
    if not any(key in usage for key in keys):
        return None
    return sum(_int(usage.get(key)) for key in keys)
