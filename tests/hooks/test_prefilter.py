"""prefilter reads a regex's necessary literals with its own parser: never a literal that a
match may lack, and as much text as re's own syntax tree gave."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from swarmdeck.hooks.prefilter import necessary_literals


@pytest.mark.parametrize(
    ("pattern", "literals"),
    [
        (r"(?:pytest|py\.test)\b", ("py.test", "pytest")),
        (r"\x41bc|\101de", ("Abc", "Ade")),
        (r"a{}bc", ("a{}bc",)),
        (r"x{2}yz", ("yz",)),
        (r"(?#a\)b)cd", ("cd",)),
        (r"(?P<n>ab)(?P=n)cd", ("ab",)),
        (r"(?>abc)de", ("de",)),
        (r"ab(?=x)cd", ("abcd",)),
        (r"[]a]bc|[a-]bc", ("-bc", "]bc", "abc")),
        (r"(?s:ab)cd", ("abcd",)),
        (r"(?i:ab)cde", ("cde",)),
        (r"a\1b", None),
        (r"\N{LATIN SMALL LETTER A}bc", ("bc",)),
        (r"(?x)a b", None),
        (r"[^a]", None),
    ],
)
def test_literals_of_each_construct(pattern: str, literals: tuple[str, ...] | None) -> None:
    assert necessary_literals(pattern) == literals


ATOMS = st.sampled_from(
    ["a", "b", "ab", "make", r"\.", r"\d", r"\s", ".", "^", "$", r"\b", "[ab]", "[a-c]", "[^a]",
     r"\x61", r"\141", r"\n", "-", "{", "}", "]", r"\(", "(?:a|b)", "(ab|ac)", "(?=a)", "(?>ab)",
     "(?i:a)", "(?P<g>b)"]
)
QUANTIFIERS = st.sampled_from(["", "", "", "*", "+", "?", "{2}", "{1,3}", "{,2}", "*?", "+?", "{}"])
PATTERNS = st.lists(st.tuples(ATOMS, QUANTIFIERS), min_size=1, max_size=6).map(
    lambda parts: "".join(atom + quantifier for atom, quantifier in parts)
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(PATTERNS, min_size=1, max_size=3).map("|".join),
    st.text("abcmke.-{}]\n", max_size=10),
)
def test_a_text_the_pattern_finds_holds_one_of_its_literals(pattern: str, text: str) -> None:
    try:
        compiled = re.compile(pattern)
    except re.error:
        return
    literals = necessary_literals(pattern)
    for candidate in (text, pattern, "ab" + text, text + "make"):
        if literals is not None and compiled.search(candidate):
            assert any(literal in candidate for literal in literals), (pattern, candidate)
