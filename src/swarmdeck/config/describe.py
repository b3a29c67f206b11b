"""`swarmdeck config show`: every key with its effective value, its source and its doc.

Read from the schema (schema.py) and the loaded Config's `sources` map, so a new key shows here
without a line of its own.
"""

from dataclasses import dataclass
from typing import Any

from swarmdeck.config.schema import SECTIONS, Config, HostConfig, Key, keys_of, number_text
from swarmdeck.sizes import SizeSpec, format_size


@dataclass(frozen=True)
class ConfigLine:
    """One row of `swarmdeck config show`."""

    key: str
    value: str
    source: str
    doc: str
    items: tuple[str, ...] = ()
    """A list's items, each as it would be written in the file; empty for any other value."""


def describe_config(config: Config) -> list[ConfigLine]:
    """Every key with its effective value, where that value came from and what it means."""
    rows = []
    for section, cls in SECTIONS.items():
        values = getattr(config, section)
        for key in keys_of(cls):
            dotted = f"{section}.{key.name}"
            rows.append(_row(dotted, getattr(values, key.name), config, key))
    for host in config.hosts:
        for key in keys_of(HostConfig):
            dotted = f"hosts[{host.name}].{key.name}"
            rows.append(_row(dotted, getattr(host, key.name), config, key))
    return rows


def _row(dotted: str, value: Any, config: Config, key: Key) -> ConfigLine:
    bounds = range_text(key)
    doc = f"{key.rule.doc} ({bounds})" if bounds else key.rule.doc
    items = tuple(_value_text(item) for item in value) if isinstance(value, tuple) else ()
    source = config.sources.get(dotted, "default")
    return ConfigLine(dotted, _value_text(value), source, doc, items)


def range_text(key: Key) -> str:
    """A number's bounds as `config show` states them ("range 1 to 100"); "" for other keys."""
    rule = key.rule
    if key.kind in (SizeSpec, SizeSpec | None):
        top = format_size(int(rule.maximum)) if rule.maximum is not None else ""
        return f"range 0 to {top} or 1% to 100%" if top else ""
    if key.kind not in (int, float):
        return ""
    if rule.minimum is not None and rule.maximum is not None:
        return f"range {number_text(rule.minimum)} to {number_text(rule.maximum)}"
    parts = []
    if rule.minimum is not None:
        parts.append(f"at least {number_text(rule.minimum)}")
    if rule.above is not None:
        parts.append(f"above {number_text(rule.above)}")
    if rule.maximum is not None:
        parts.append(f"at most {number_text(rule.maximum)}")
    return "range " + ", ".join(parts) if parts else ""


def _value_text(value: Any) -> str:
    """A value as it would be written in the file."""
    if value is None:
        return "(not set)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, SizeSpec):
        return f'"{value}"'
    if isinstance(value, str):
        if "\\" in value and "'" not in value and "\n" not in value:
            return f"'{value}'"
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
    if isinstance(value, tuple):
        return "[" + ", ".join(_value_text(item) for item in value) + "]"
    return repr(value)
