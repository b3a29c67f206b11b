"""Loading the config: a TOML file over the embedded defaults, each problem at file:line.

A file that cannot be used as written stops with one ConfigError line naming the file, the
line and the key; a missing file means the defaults, silently, by design (unless
SWARMDECK_CONFIG names it). What a key may hold is the schema's (schema.py); this module turns
parsed TOML into a Config by it, and names the modules a cached Config depends on.
"""

import os
from dataclasses import MISSING, fields
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import swarmdeck.config.schema as schema
from swarmdeck import paths, sizes
from swarmdeck.config.schema import (
    SECTIONS,
    Config,
    HostConfig,
    Key,
    Rule,
    host_name_problem,
    keys_of,
    number_text,
)
from swarmdeck.durations import finite
from swarmdeck.errors import ConfigError, UsageError
from swarmdeck.hooks import heavy
from swarmdeck.sizes import SizeSpec, format_size

if TYPE_CHECKING:
    import tomllib

    from swarmdeck.toml_lines import KeyLines

MAX_CONFIG_BYTES = 1024 * 1024
"""A config file larger than this is refused unread: a real one is a few KiB."""
MAX_DEPTH = 16
"""Arrays and tables nested deeper than this are refused: the schema needs three levels."""


def config_readers() -> tuple[str, ...]:
    """The source files whose text decides what a config file gives (its keys, defaults and
    checks): a Config cached from the file is stale when any of them changes."""
    others = (schema, sizes, heavy)
    return (__file__, *(module.__file__ or "" for module in others))


def load_config(path: os.PathLike[str] | str | None = None) -> Config:
    """The effective config from `path` (default: paths.config_path()); a missing file means
    the defaults, unless SWARMDECK_CONFIG names it: a path given on purpose must exist."""
    from pathlib import PurePath  # here: a start that finds the config cached names no path

    name = str(PurePath(paths.config_path() if path is None else path))
    text = _read(name)
    if text is None:
        if name == paths.explicit_config():
            raise ConfigError(
                f"config {name} does not exist, and SWARMDECK_CONFIG names it: create it, or "
                "unset SWARMDECK_CONFIG for the embedded defaults"
            )
        return Config()
    return parse_config(text, name)


def parse_config(text: str, path: os.PathLike[str] | str) -> Config:
    """Check TOML `text` (read from `path`, named in errors) and build the Config it gives."""
    # Here, not at the top: a start that finds the config cached (config_cache.py) parses none.
    import tomllib
    from pathlib import PurePath

    from swarmdeck.toml_lines import KeyLines

    path = str(PurePath(path))
    too_deep = f"config {path}: values nested over {MAX_DEPTH} levels deep; the schema needs 3"
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(_one_line(_syntax_message(path, text, err))) from None
    except RecursionError:
        raise ConfigError(too_deep) from None
    if _depth(data, MAX_DEPTH):
        raise ConfigError(too_deep)
    return _Loader(path, KeyLines(text)).config(data)


def _read(path: str) -> str | None:
    """The file's text; None when there is no file (defaults apply); ConfigError when unreadable.

    It is opened without blocking and must be a regular file of at most MAX_CONFIG_BYTES: a
    FIFO, a device or a huge file is refused in one line instead of hanging or eating memory.
    """
    from swarmdeck.regular_files import FileTooLarge, NotRegularFile, read_regular

    try:
        data = read_regular(path, MAX_CONFIG_BYTES)
    except FileNotFoundError:
        if os.path.islink(path):
            raise ConfigError(
                f"config {path}: cannot read it: "
                f"it links to {_one_line(os.readlink(path))}, which does not exist"
            ) from None
        return None
    except NotRegularFile as err:
        raise ConfigError(f"config {path}: cannot read it: {err}") from None
    except FileTooLarge:
        raise ConfigError(
            f"config {path}: it is over {format_size(MAX_CONFIG_BYTES)} ({MAX_CONFIG_BYTES}"
            " bytes); a config is a few KiB: is this the right file?"
        ) from None
    except OSError as err:
        raise ConfigError(f"config {path}: cannot read it: {err.strerror}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise ConfigError(
            f"config {path}:{line}: not UTF-8 text (byte {err.start + 1}); TOML files are UTF-8"
        ) from None


def _one_line(text: str) -> str:
    """`text` with control characters escaped, so a message stays on one line."""
    if text.isprintable():
        return text
    return "".join(char if char.isprintable() else repr(char)[1:-1] for char in text)


def _depth(value: Any, limit: int) -> bool:
    """Whether arrays and tables in `value` nest deeper than `limit` (walked without recursion)."""
    stack = [(value, 0)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if level >= limit:
            return True
        stack.extend((child, level + 1) for child in children)
    return False


def _syntax_message(path: str, text: str, err: "tomllib.TOMLDecodeError") -> str:
    import re

    reason = str(err)
    lines = text.splitlines()
    found = re.search(r"at line (\d+)", reason)
    line = int(found.group(1)) if found else max(1, len(lines))
    source = lines[line - 1].strip() if 0 < line <= len(lines) else ""
    near = f" near {source!r}" if source else ""
    return f"config {path}:{line}: TOML syntax error{near}: {reason}"


class _Invalid(Exception):
    """A value that breaks the schema; the loader adds file, line and key."""


class _Loader:
    """Turns parsed TOML into a Config, naming file:line and the key for the first problem."""

    def __init__(self, path: str, lines: "KeyLines") -> None:
        self.path = path
        self.lines = lines
        self.sources: dict[str, str] = {}

    def config(self, data: dict[str, Any]) -> Config:
        for name, value in data.items():
            if name not in SECTIONS and name != "hosts":
                self._unknown_top_level(name, value)
        sections = {
            name: self._section(name, cls, data.get(name, {})) for name, cls in SECTIONS.items()
        }
        hosts = self._hosts(data.get("hosts", []))
        return Config(
            **sections, hosts=hosts, path=self.path, sources=MappingProxyType(self.sources)
        )

    def fail(self, where: tuple[str | int, ...], key: str, problem: str) -> ConfigError:
        line = self.lines.line_of(where)
        return ConfigError(_one_line(f"config {self.path}:{line}: {key}: {problem}"))

    def _unknown_top_level(self, name: str, value: Any) -> None:
        known = [*SECTIONS, "hosts"]
        if isinstance(value, dict):
            problem = f"unknown section [{name}]" + _suggest(name, known, "[{}]")
        else:
            owners = [section for section, cls in SECTIONS.items() if name in _names(cls)]
            if owners:
                hint = f"; did you mean {owners[0]}.{name} (under [{owners[0]}])?"
            else:
                hint = _suggest(name, known, "[{}]")
            problem = "unknown key outside any section" + hint
        raise self.fail((name,), name, problem)

    def _section(self, name: str, cls: type, table: Any) -> Any:
        if not isinstance(table, dict):
            raise self.fail((name,), name, f"expected a table [{name}], got {_describe(table)}")
        return self._build(cls, table, name, (name,), f"[{name}]")

    def _hosts(self, tables: Any) -> tuple[HostConfig, ...]:
        if not isinstance(tables, list) or not all(isinstance(item, dict) for item in tables):
            raise self.fail(
                ("hosts",), "hosts", f"expected [[hosts]] tables, got {_describe(tables)}"
            )
        if tables:
            # Only for a file with [[hosts]]: the light paths that read no peers skip it.
            from swarmdeck.probes.machine import local_host_name as own_name
        hosts: list[HostConfig] = []
        first_line: dict[str, int] = {}
        for index, table in enumerate(tables):
            name = table.get("name")
            usable = isinstance(name, str) and host_name_problem(name) is None
            label = f"hosts[{name}]" if usable else f"hosts[#{index + 1}]"
            host = self._build(HostConfig, table, label, ("hosts", index), "[[hosts]]")
            line = self.lines.line_of(("hosts", index, "name"))
            if host.name in first_line:
                raise self.fail(
                    ("hosts", index, "name"),
                    f"{label}.name",
                    f"duplicate host name {host.name!r}, "
                    f"first given at line {first_line[host.name]}",
                )
            first_line[host.name] = line
            if host.name.lower() == own_name().lower():
                raise self.fail(
                    ("hosts", index, "name"),
                    f"{label}.name",
                    f"{host.name!r} is this machine's own name, which its own jobs are listed"
                    " under: [[hosts]] lists the other machines; remove this entry or give the"
                    " peer's own name",
                )
            hosts.append(host)
        return tuple(hosts)

    def _build(
        self,
        cls: type,
        table: dict[str, Any],
        label: str,
        where: tuple[str | int, ...],
        container: str,
    ) -> Any:
        """An instance of `cls` from `table`; `label` prefixes keys, `container` names the table."""
        keys = keys_of(cls)
        names = [key.name for key in keys]
        for name in table:
            if name not in names:
                problem = "unknown key" + _suggest(name, names, f"{label}.{{}}")
                raise self.fail((*where, name), f"{label}.{name}", problem)
        values: dict[str, Any] = {}
        for key in keys:
            dotted = f"{label}.{key.name}"
            if key.name in table:
                try:
                    values[key.name] = _convert(key, table[key.name])
                except _Invalid as bad:
                    raise self.fail((*where, key.name), dotted, str(bad)) from None
                self.sources[dotted] = f"{self.path}:{self.lines.line_of((*where, key.name))}"
            elif key.default is MISSING:
                raise self.fail(where, dotted, f"missing: every {container} table needs {key.name}")
            else:
                self.sources[dotted] = "default"
        return cls(**values)


def _names(cls: type) -> list[str]:
    return [item.name for item in fields(cls)]


def _suggest(name: str, known: list[str], form: str) -> str:
    import difflib  # only a bad file needs it

    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    if close:
        return f"; did you mean {form.format(close[0])}?"
    return "; known: " + ", ".join(form.format(item) for item in known)


def _describe(value: Any) -> str:
    """A TOML value as a person would name it in an error."""
    if isinstance(value, bool):
        return f"a boolean ({'true' if value else 'false'})"
    if isinstance(value, int):
        return f"a whole number ({value})"
    if isinstance(value, float):
        return f"a number ({value})"
    if isinstance(value, str):
        return f"a string ({value!r})"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "a table"
    return f"a date/time ({value})"


def _convert(key: Key, value: Any) -> Any:
    """The value in the key's type, or _Invalid saying what is wrong with it."""
    kind = key.kind
    if kind is bool:
        if not isinstance(value, bool):
            raise _Invalid(f"expected true or false, got {_describe(value)}")
        result: Any = value
    elif kind is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise _Invalid(f"expected a whole number, got {_describe(value)}")
        result = value
    elif kind is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise _Invalid(f"expected a number, got {_describe(value)}")
        if not finite(value):
            raise _Invalid(f"expected a finite number, got {value}")
        result = float(value)
    elif kind is str:
        if not isinstance(value, str):
            raise _Invalid(f"expected a string, got {_describe(value)}")
        result = value
    elif kind == tuple[str, ...]:
        result = _strings(value)
    elif kind in (SizeSpec, SizeSpec | None):
        result = _size_value(value)
    else:
        raise TypeError(f"config key {key.name} has a type the loader does not know: {kind}")
    _check_bounds(key.rule, result)
    return result


def _strings(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise _Invalid(f"expected an array of strings, got {_describe(value)}")
    for number, item in enumerate(value, start=1):
        if not isinstance(item, str):
            raise _Invalid(f"expected an array of strings, item {number} is {_describe(item)}")
    return tuple(value)


def _size_value(value: Any) -> SizeSpec:
    """A size as the config writes it: with a unit, since `reserve = 4` meaning four bytes is a
    trap; zero alone needs none."""
    if isinstance(value, str):
        if value.strip().isdigit() and int(value) != 0:
            raise _Invalid(_no_unit(value.strip()))
        try:
            return SizeSpec.parse(value)
        except UsageError as err:
            raise _Invalid(err.message) from None
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 0:
            raise _Invalid(f'size {value} is negative: give one like "2G" or "10%"')
        if value != 0:
            raise _Invalid(_no_unit(str(value)))
        return SizeSpec.of_bytes(value)
    raise _Invalid(f'expected a size like "2G" or "10%", got {_describe(value)}')


def _no_unit(number: str) -> str:
    return (
        f'size {number} has no unit: write "{number}B" for bytes, or K, M, G or T (powers of '
        f'1024) as in "4G", or a percent like "10%"'
    )


def _check_bounds(rule: Rule, value: Any) -> None:
    if isinstance(value, SizeSpec):
        top = rule.maximum
        if top is not None and value.absolute is not None and value.absolute > top:
            raise _Invalid(f"must be at most {format_size(int(top))}, got {value}")
        return
    if rule.minimum is not None and value < rule.minimum:
        raise _Invalid(f"must be at least {number_text(rule.minimum)}, got {number_text(value)}")
    if rule.above is not None and value <= rule.above:
        raise _Invalid(f"must be above {number_text(rule.above)}, got {number_text(value)}")
    if rule.maximum is not None and value > rule.maximum:
        raise _Invalid(f"must be at most {number_text(rule.maximum)}, got {number_text(value)}")
    if rule.check is not None:
        problem = rule.check(value)
        if problem:
            raise _Invalid(problem)
