"""Where each table and key of a TOML text starts, for errors that name file:line."""

from __future__ import annotations

from swarmdeck.toml_lines import KeyLines

TEXT = '''\
# a comment with key = value in it
[memory]
reserve = "10%"
"quoted.key" = 1

[hooks]
heavy_patterns = [
  "fake = line",
  "[not.a.table]",
]
note = """
more = text
"""
a.b = 2

[[hosts]]
name = "one"
[[hosts]]
name = "two"
inline = { port = 22 }
'''


def test_tables_and_keys_have_the_line_they_start_on() -> None:
    lines = KeyLines(TEXT)
    assert lines.line_of(("memory",)) == 2
    assert lines.line_of(("memory", "reserve")) == 3
    assert lines.line_of(("memory", "quoted.key")) == 4
    assert lines.line_of(("hooks", "heavy_patterns")) == 7
    assert lines.line_of(("hooks", "note")) == 11
    assert lines.line_of(("hooks", "a", "b")) == 14


def test_text_inside_multi_line_values_is_never_a_key_or_a_table() -> None:
    lines = KeyLines(TEXT)
    assert lines.line_of(("hooks", "fake")) == 6  # falls back to its table
    assert lines.line_of(("not", "a", "table")) == 1
    assert lines.line_of(("hooks", "more")) == 6


def test_each_array_table_is_counted_and_inline_keys_fall_back_to_their_parent() -> None:
    lines = KeyLines(TEXT)
    assert lines.line_of(("hosts",)) == 16
    assert lines.line_of(("hosts", 0, "name")) == 17
    assert lines.line_of(("hosts", 1, "name")) == 19
    assert lines.line_of(("hosts", 1, "inline", "port")) == 20
