"""Line numbers of tables and keys in TOML text, which tomllib does not report.

Pure text scanning, no I/O and no schema: config.py uses it to name `file:line` in every error
and in `config show`'s sources.
"""

from __future__ import annotations


class KeyLines:
    """Line numbers of tables and keys in TOML text, which tomllib does not report.

    Scans the (already valid) text line by line: `[table]` and `[[array]]` headers set the
    current table, `key =` lines (dotted keys included) record `table + key`. Values that span
    lines (arrays, inline tables, multi-line strings) are skipped, so text inside them is never
    taken for a key. Keys inside inline tables fall back to the line of their parent.
    """

    def __init__(self, text: str) -> None:
        self.lines: dict[tuple[str | int, ...], int] = {}
        table: tuple[str | int, ...] = ()
        counts: dict[tuple[str, ...], int] = {}
        depth, string = 0, ""
        for number, raw in enumerate(text.splitlines(), start=1):
            if depth or string:
                depth, string = _scan_value(raw, depth, string)
                continue
            stripped = raw.strip()
            if not stripped or stripped.startswith("#"):
                continue
            if stripped.startswith("[["):
                name = _split_key(stripped[2 : _closing(stripped, "]]")])
                counts[name] = counts.get(name, -1) + 1
                table = (*name, counts[name])
                self.lines.setdefault(name, number)
                self.lines.setdefault(table, number)
            elif stripped.startswith("["):
                name = _split_key(stripped[1 : _closing(stripped, "]")])
                table = name
                self.lines.setdefault(table, number)
            else:
                equals = _closing(stripped, "=")
                key = (*table, *_split_key(stripped[:equals]))
                for end in range(len(table) + 1, len(key) + 1):
                    self.lines.setdefault(key[:end], number)
                depth, string = _scan_value(stripped[equals + 1 :], 0, "")

    def line_of(self, where: tuple[str | int, ...]) -> int:
        """The line of `where`, else of its nearest recorded parent, else 1."""
        for end in range(len(where), 0, -1):
            if where[:end] in self.lines:
                return self.lines[where[:end]]
        return 1


def _closing(text: str, token: str) -> int:
    """Index of the first `token` outside quotes (a header's end, a key's `=`)."""
    index, quote = 0, ""
    while index < len(text):
        char = text[index]
        if quote:
            if char == "\\" and quote == '"':
                index += 1
            elif char == quote:
                quote = ""
        elif char in "\"'":
            quote = char
        elif text.startswith(token, index):
            return index
        index += 1
    return len(text)


def _split_key(text: str) -> tuple[str, ...]:
    """`a."b.c".d` → ("a", "b.c", "d")."""
    parts: list[str] = []
    current, quote, index = "", "", 0
    while index < len(text):
        char = text[index]
        if quote:
            if char == "\\" and quote == '"' and index + 1 < len(text):
                index += 1
                current += text[index]
            elif char == quote:
                quote = ""
            else:
                current += char
        elif char in "\"'":
            quote = char
        elif char == ".":
            parts.append(current.strip())
            current = ""
        else:
            current += char
        index += 1
    parts.append(current.strip())
    return tuple(parts)


def _scan_value(text: str, depth: int, string: str) -> tuple[int, str]:
    """Follow a value across a line: bracket depth and any open multi-line string after it."""
    index = 0
    while index < len(text):
        if string:
            end = text.find(string, index)
            if end < 0:
                return depth, string
            index, string = end + 3, ""
            continue
        char = text[index]
        if text.startswith(('"""', "'''"), index):
            string = text[index : index + 3]
            index += 3
            continue
        if char == "#":
            break
        if char in "\"'":
            index = _string_end(text, index)
        elif char in "[{":
            depth += 1
        elif char in "]}":
            depth -= 1
        index += 1
    return depth, string


def _string_end(text: str, start: int) -> int:
    """Index of the quote closing the one-line string that opens at `start`."""
    quote, index = text[start], start + 1
    while index < len(text):
        if text[index] == "\\" and quote == '"':
            index += 2
            continue
        if text[index] == quote:
            return index
        index += 1
    return index
