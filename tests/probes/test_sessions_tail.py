"""The incremental transcript tail: appended bytes only, partial lines kept, damage survived."""

from __future__ import annotations

import json
import os
from pathlib import Path

from claude_lines import ClaudeTree, Lines, append
from swarmdeck.probes.claude.jsonl_tail import JsonlTail, parse_line
from swarmdeck.probes.claude.sessions import SessionsProbe

SID = "7777cccc-0000-4000-8000-000000000003"


def _line(n: int) -> str:
    return json.dumps({"type": "user", "n": n}) + "\n"


def test_second_read_returns_only_appended_lines(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text("".join(_line(n) for n in range(1000)))
    tail = JsonlTail(path)
    first = tail.read()
    assert len(first.records) == 1000
    append(path, _line(1000))
    second = tail.read()
    assert [r["n"] for r in second.records] == [1000]
    assert second.bytes_read == len(_line(1000))
    assert not second.reset
    assert not tail.changed()


def test_partial_last_line_is_kept_until_completed(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    whole = _line(1)
    path.write_text(_line(0) + whole[:10])
    tail = JsonlTail(path)
    assert [r["n"] for r in tail.read().records] == [0]
    append(path, whole[10:])
    assert [r["n"] for r in tail.read().records] == [1]


def test_corrupt_lines_are_skipped_and_the_next_good_line_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    crashed = '{"type":"assistant","message":{"id":"x'
    path.write_text(_line(0) + "not json at all\n" + "[1, 2]\n" + crashed + _line(1) + _line(2))
    read = JsonlTail(path).read()
    assert [r["n"] for r in read.records] == [0, 1, 2]
    assert read.skipped == 2


def test_parse_line_recovers_a_record_glued_to_a_crashed_write() -> None:
    assert parse_line(b'{"type":"us{"type":"user","n":3}') == {"type": "user", "n": 3}
    assert parse_line(b"garbage") is None
    assert parse_line(b'{"a": 1') is None


def test_truncated_file_is_read_again_from_its_start(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text("".join(_line(n) for n in range(50)))
    tail = JsonlTail(path)
    tail.read()
    path.write_text(_line(7))
    read = tail.read()
    assert read.reset
    assert [r["n"] for r in read.records] == [7]


def test_rewritten_file_of_the_same_size_or_larger_is_noticed(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(_line(1) + _line(2))
    tail = JsonlTail(path)
    tail.read()
    with open(path, "r+") as handle:
        handle.write(json.dumps({"type": "other", "n": 9}) + "\n")
        handle.write(_line(3) + _line(4) + _line(5))
    read = tail.read()
    assert read.reset
    assert [r["n"] for r in read.records][-3:] == [3, 4, 5]


def test_replaced_file_is_read_from_its_start(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text("".join(_line(n) for n in range(5)))
    tail = JsonlTail(path)
    tail.read()
    fresh = tmp_path / "t.new"
    fresh.write_text("".join(_line(n) for n in range(100, 110)))
    os.replace(fresh, path)
    read = tail.read()
    assert read.reset
    assert [r["n"] for r in read.records] == list(range(100, 110))


def test_replaced_file_with_the_same_first_lines_is_read_from_its_start(
    tmp_path: Path,
) -> None:
    """Transcripts start alike (the same envelope), so a new file can share the old head:
    it is another file all the same."""
    path = tmp_path / "t.jsonl"
    path.write_text("".join(_line(n) for n in range(5)))
    tail = JsonlTail(path)
    tail.read()
    fresh = tmp_path / "t.new"
    fresh.write_text("".join(_line(n) for n in [0, 1, 2, *range(300, 320)]))
    os.replace(fresh, path)
    read = tail.read()
    assert read.reset
    assert [r["n"] for r in read.records] == [0, 1, 2, *range(300, 320)]


def test_a_line_too_long_to_hold_is_skipped_once_and_the_next_line_kept(
    tmp_path: Path,
) -> None:
    path = tmp_path / "t.jsonl"
    giant = json.dumps({"type": "user", "pad": "x" * 5000, "inner": {"type": "user", "n": 9}})
    path.write_text(_line(0) + giant[:3000])
    tail = JsonlTail(path, max_partial=1024)
    first = tail.read()
    assert [r["n"] for r in first.records] == [0]
    append(path, giant[3000:] + "\n" + _line(1))
    second = tail.read()
    assert [r["n"] for r in second.records] == [1]
    assert first.skipped + second.skipped == 1


def test_undo_snapshots_are_not_parsed(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    snapshot = {"type": "file-history-snapshot", "messageId": "m", "snapshot": {"files": {}}}
    path.write_text(json.dumps(snapshot, separators=(",", ":")) + "\n" + _line(0))
    read = JsonlTail(path).read()
    assert read.records == [{"type": "user", "n": 0}]
    assert read.skipped == 0


def test_removed_file_reads_as_gone(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(_line(0))
    tail = JsonlTail(path)
    tail.read()
    path.unlink()
    read = tail.read()
    assert read.gone and read.reset


def test_probe_follows_truncation_of_a_main_transcript(tmp_path: Path) -> None:
    tree = ClaudeTree(tmp_path / "claude")
    main = Lines(SID)
    main.prompt("go", 0)
    main.agent("toolu_a", "a", "a prompt", 1)
    main.agent("toolu_b", "b", "b prompt", 2)
    path = tree.write_main(main)
    probe = SessionsProbe(tmp_path / "claude")
    assert len(probe.refresh()[0].subagents) == 2
    fresh = Lines(SID)
    fresh.prompt("start over", 10)
    fresh.agent("toolu_c", "c", "c prompt", 11)
    path.write_text(fresh.dumps())
    assert [s.id for s in probe.refresh()[0].subagents] == ["toolu_c"]


def test_probe_reads_only_changed_paths_it_is_told_about(tmp_path: Path) -> None:
    tree = ClaudeTree(tmp_path / "claude")
    main = Lines(SID)
    main.prompt("go", 0)
    main.agent("toolu_a", "a", "a prompt", 1)
    path = tree.write_main(main)
    probe = SessionsProbe(tmp_path / "claude")
    probe.refresh()
    more = Lines(SID)
    more.foreground_done("toolu_a", "aa", 20)
    append(path, more.dumps())
    sessions = probe.refresh([path])
    assert sessions[0].subagents[0].status == "completed"
    agent = Lines(SID, sidechain=True, agent_id="aa")
    agent.prompt("a prompt", 2)
    agent_path = tree.write_agent(agent)
    sessions = probe.refresh([agent_path])
    assert sessions[0].subagents[0].transcript_path == str(agent_path)
