"""A set of strings remembered by their digests: what it answers is what a set would."""

from __future__ import annotations

import tracemalloc

from swarmdeck.probes.claude.digest_set import DigestSet


def test_it_answers_as_a_set_of_the_strings_would() -> None:
    names = [f"agent-a{n:016x}.jsonl" for n in range(0, 3000, 3)]
    remembered = DigestSet()
    for name in reversed(names):
        remembered.add(name)
    for name in names[::5]:
        remembered.add(name)
    assert all(name in remembered for name in names)
    assert not any(f"agent-a{n:016x}.jsonl" in remembered for n in range(1, 3000, 3))
    assert b"agent-a0000000000000000.jsonl" not in remembered
    assert None not in remembered


def test_it_holds_about_eight_bytes_for_each_string_however_often_given() -> None:
    names = [f"msg_01{n:024d}" for n in range(4000)]
    remembered = DigestSet()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for name in names + names:
            remembered.add(name)
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert 8 * len(names) <= held <= 12 * len(names)
